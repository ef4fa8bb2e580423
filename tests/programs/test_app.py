"""The programs' kernels as a CUDA application (tests/programs/apps/suite_app.cu: GEMM,
a two-level scan, histogram, a host loop of bitonic steps timed with events, a filter
copied to ``__constant__`` with cudaMemcpyToSymbol, BFS), built by nvcc -cudart shared
and run unchanged on a mounted gdevd through gdev-py's libcudart.so and libcuda.so.1,
once on each engine (/proc/gdev/ptx_engine); the application checks its own results.  Also
thrust (apps/thrust_app.cu), built by nvcc, on the interpreter."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.clib.cbuild import ROOT, clib_dir
from tests.clib.runner import need_cuda_h, nvcc
from tests.daemon.conftest import (
    gdevd,  # noqa: F401  (the module-scoped daemon)
    read_text,
    write_once,
)

pytestmark = pytest.mark.mount
APP = Path(__file__).resolve().parent / "apps" / "suite_app.cu"
WORKLOADS = ("sgemm", "scan", "histogram", "bitonic", "convolution", "bfs")


@pytest.fixture(scope="module")
def suite_app(tmp_path_factory) -> Path:
    need_cuda_h()
    clib_dir()
    out = tmp_path_factory.mktemp("app") / "suite_app"
    subprocess.run([nvcc(), "-cudart", "shared", "-gencode", "arch=compute_75,code=compute_75",
                    "-o", str(out), str(APP)], check=True, capture_output=True)
    return out


@pytest.mark.slow     # the daemon compiles the application's module (~20 s on 2 cores)
@pytest.mark.parametrize("engine", ["jit", "interp"])
def test_application_on_each_engine(gdevd, suite_app, engine) -> None:  # noqa: F811
    write_once(gdevd.proc_path("ptx_engine"), engine.encode())
    try:
        res = subprocess.run([str(ROOT / "scripts" / "gdev-run"), "--mount", gdevd.mount,
                              str(suite_app)], capture_output=True, text=True, timeout=600)
    finally:
        write_once(gdevd.proc_path("ptx_engine"), b"auto")
    assert res.returncode == 0, res.stdout + res.stderr
    for name in WORKLOADS:
        assert f"\n{name} ok\n" in "\n" + res.stdout, res.stdout
    rows = [r.split() for r in read_text(gdevd.proc_path("ptx_modules")).splitlines()[1:]]
    # the application's one module: compiled whole when the policy asked for it
    if engine == "jit":
        assert any(r[2] == "jit" and r[4] == r[5] and int(r[5]) >= 12 for r in rows), rows


@pytest.mark.slow     # nvcc builds thrust (~25 s); the interpreter runs it (no C compile)
def test_thrust_algorithms_on_the_interpreter(gdevd, tmp_path) -> None:  # noqa: F811
    """CUB's onesweep radix sort, reductions and scans: warp-synchronous code between
    spinning blocks (the interpreter's forward-progress step once broke a shuffle)."""
    need_cuda_h()
    clib_dir()
    app = tmp_path / "thrust_app"
    subprocess.run([nvcc(), "-cudart", "shared", "-gencode", "arch=compute_75,code=compute_75",
                    "-o", str(app), str(APP.parent / "thrust_app.cu")], check=True,
                   capture_output=True)
    write_once(gdevd.proc_path("ptx_engine"), b"interp")
    try:
        res = subprocess.run([str(ROOT / "scripts" / "gdev-run"), "--mount", gdevd.mount,
                              str(app)], capture_output=True, text=True, timeout=600)
    finally:
        write_once(gdevd.proc_path("ptx_engine"), b"auto")
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout == ("thrust ok n=20000 sort=1 keys=1 sumsq=1 scan=1 count=1 "
                          "unique=1\n"), res.stdout
