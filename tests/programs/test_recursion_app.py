"""Recursive device functions in an unmodified nvcc program (apps/recursion_app.cu: fib, a
binary-tree sum over arrays, a quicksort of a per-thread local array), built with
-cudart shared and run on a mounted gdevd under each engine policy; the program checks its
results against the same functions run on the host.  Under ``jit`` the recursive kernels
stay on the interpreter, and /proc/gdev/ptx_interpreted says why."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clib.runner import build_cuda
from tests.daemon.conftest import gdevd, read_text  # noqa: F401  (the module-scoped daemon)

from .apprun import module_rows, run_on_engine

pytestmark = pytest.mark.mount
APP = Path(__file__).resolve().parent / "apps" / "recursion_app.cu"
KERNELS = ("_Z10fib_kernelPKiPii", "_Z11tree_kernelPKiS0_S0_S0_Pxi", "_Z11sort_kernelPKiPii")


@pytest.fixture(scope="module")
def recursion_app(tmp_path_factory) -> Path:
    """The application, built once for the module."""
    return build_cuda(APP, tmp_path_factory.mktemp("recursion") / "recursion_app")


@pytest.mark.parametrize("engine", ["jit", "interp"])
def test_recursive_device_functions(gdevd, recursion_app, engine) -> None:  # noqa: F811
    res = run_on_engine(gdevd, recursion_app, engine)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.split() == ["stack", "4096", "fib", "ok", "tree", "ok", "sort", "ok"], \
        res.stdout + res.stderr
    if engine == "jit":
        module_rows(gdevd)          # the builds have ended
        rows = read_text(gdevd.proc_path("ptx_interpreted"))
        for k in KERNELS:
            line = next((r for r in rows.splitlines() if k in r), "")
            assert "recursive" in line, rows
