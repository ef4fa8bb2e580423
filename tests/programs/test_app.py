"""The programs' kernels as a CUDA application (tests/programs/apps/suite_app.cu: GEMM,
a two-level scan, histogram, a host loop of bitonic steps timed with events, a filter
copied to ``__constant__`` with cudaMemcpyToSymbol, BFS), built by nvcc -cudart shared
and run unchanged on a mounted gdevd through gdev-py's libcudart.so and libcuda.so.1,
once on each engine (/proc/gdev/ptx_engine); the application checks its own results.  Also
thrust (apps/thrust_app.cu), built by nvcc, on the interpreter."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clib.runner import build_cuda
from tests.daemon.conftest import gdevd  # noqa: F401  (the module-scoped daemon)

from .apprun import module_rows, run_on_engine

pytestmark = pytest.mark.mount
APP = Path(__file__).resolve().parent / "apps" / "suite_app.cu"
WORKLOADS = ("sgemm", "scan", "histogram", "bitonic", "convolution", "bfs")


@pytest.fixture(scope="module")
def suite_app(tmp_path_factory) -> Path:
    return build_cuda(APP, tmp_path_factory.mktemp("app") / "suite_app")


@pytest.mark.slow     # the daemon compiles the application's module (~20 s on 2 cores)
@pytest.mark.parametrize("engine", ["jit", "interp"])
def test_application_on_each_engine(gdevd, suite_app, engine) -> None:  # noqa: F811
    res = run_on_engine(gdevd, suite_app, engine)
    assert res.returncode == 0, res.stdout + res.stderr
    for name in WORKLOADS:
        assert f"\n{name} ok\n" in "\n" + res.stdout, res.stdout
    rows = module_rows(gdevd)
    # the application's one module: compiled whole when the policy asked for it
    if engine == "jit":
        assert any(r[2] == "jit" and r[4] == r[5] and int(r[5]) >= 12 for r in rows), rows


@pytest.mark.slow     # nvcc builds thrust (~25 s); the interpreter runs it (no C compile)
def test_thrust_algorithms_on_the_interpreter(gdevd, tmp_path) -> None:  # noqa: F811
    """CUB's onesweep radix sort, reductions and scans: warp-synchronous code between
    spinning blocks (the interpreter's forward-progress step once broke a shuffle)."""
    app = build_cuda(APP.parent / "thrust_app.cu", tmp_path / "thrust_app")
    res = run_on_engine(gdevd, app, "interp")
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout == ("thrust ok n=20000 sort=1 keys=1 sumsq=1 scan=1 count=1 "
                          "unique=1\n"), res.stdout
