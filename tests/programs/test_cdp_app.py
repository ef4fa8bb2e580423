"""Dynamic parallelism in an nvcc-built application (tests/programs/apps/cdp_app.cu, built
with ``-rdc=true -lcudadevrt``, PTX embedded): a cdpSimplePrint-shaped tree of printing
grids, a cdpSimpleQuicksort-shaped recursive sort in device-created non-blocking streams
checked against the host's sort, a cdpAdvancedQuicksort-shaped multi-block sort (warp
ballots, the last block of each level launching the next, bitonic sorts in shared memory
for short runs), a prefix sum whose passes are tail launches, and per-thread scratch
buffers from device-side cudaMalloc, cleared, filled and copied out by cudaMemsetAsync, a
child grid and cudaMemcpyAsync in stream order, then cudaFreed by a later kernel, run
unchanged on a mounted gdevd through gdev-py's libcudart.so and libcuda.so.1 on each
engine; the application checks its own results."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import pytest

from tests.clib.runner import need_cuda_h, nvcc
from tests.daemon.conftest import gdevd  # noqa: F401  (the module-scoped daemon)

from .apprun import run_on_engine

pytestmark = pytest.mark.mount
APP = Path(__file__).resolve().parent / "apps" / "cdp_app.cu"


def build_cdp(out: Path, cudart: str = "shared") -> Path:
    need_cuda_h()
    subprocess.run([nvcc(), "-cudart", cudart, "-rdc=true", "-gencode",
                    "arch=compute_75,code=compute_75", "-o", str(out), str(APP), "-lcudadevrt"],
                   check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def cdp_app(tmp_path_factory) -> Path:
    return build_cdp(tmp_path_factory.mktemp("cdp") / "cdp_app")


def test_built_by_nvccs_default_on_nvidias_runtime(gdevd, tmp_path) -> None:  # noqa: F811
    """NVIDIA's static runtime hands libcuda the device-linked wrapper; the device runtime's
    unit (machine code) is left out as with gdev-py's runtime."""
    res = run_on_engine(gdevd, build_cdp(tmp_path / "cdp_static", "static"), "jit")
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.splitlines()[-1] == "cdp ok", res.stdout


@pytest.mark.parametrize("engine", ["interp", "jit"])
def test_kernels_launching_kernels_on_each_engine(gdevd, cdp_app, engine) -> None:  # noqa: F811
    res = run_on_engine(gdevd, cdp_app, engine)
    assert res.returncode == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert lines[-8:] == ["print grids=14", "grid depth=0 block=0 uid=14 parent=-2",
                          "quiet parent synchronized", "qsort n=3000 launch_errors=0",
                          "advanced n=6000 recursed", "scan n=4096 passes=12",
                          "scratch n=48 wrong=0 failed=0", "cdp ok"], res.stdout
    # every grid of the tree printed once: 2 blocks at depth 0, 4 at depth 1, 8 at depth 2
    grids = [ln.split()[1] for ln in lines[:-8] if ln.startswith("grid ")]
    assert Counter(grids) == {"depth=0": 2, "depth=1": 4, "depth=2": 8}, res.stdout
