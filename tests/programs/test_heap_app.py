"""Device malloc/free and new/delete in an nvcc-built application (tests/programs/apps/
heap_app.cu: cudaDeviceSetLimit growing the heap before first use and failing after, a
struct array per thread with new[]/delete[], a linked list per block built by one launch
and walked and freed by the next, NULL once the heap is exhausted), run unchanged on a
mounted gdevd through gdev-py's libcudart.so and libcuda.so.1 on each engine; the
application checks its own results; built with -rdc=true too (malloc and free are then
system calls the unit linker leaves to the engine)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clib.runner import build_cuda
from tests.daemon.conftest import gdevd  # noqa: F401  (the module-scoped daemon)

from .apprun import module_rows, run_on_engine
from .test_rdc_app import build_rdc

pytestmark = pytest.mark.mount
APP = Path(__file__).resolve().parent / "apps" / "heap_app.cu"


@pytest.fixture(scope="module")
def heap_app(tmp_path_factory) -> Path:
    return build_cuda(APP, tmp_path_factory.mktemp("heap") / "heap_app")


OUTPUT = "default heap 8388608\nlimit ok\nitems ok\nlist ok\nexhaust ok\nfixed ok\n"


@pytest.mark.parametrize("engine", ["interp", "jit"])
def test_heap_application_on_each_engine(gdevd, heap_app, engine) -> None:  # noqa: F811
    res = run_on_engine(gdevd, heap_app, engine)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout == OUTPUT, res.stdout
    if engine == "jit":      # every kernel ran compiled
        rows = module_rows(gdevd)
        assert any(r[2] == "jit" and r[4] == r[5] == "5" for r in rows), rows


@pytest.mark.parametrize("engine", ["interp", "jit"])
def test_heap_application_built_with_rdc(gdevd, tmp_path_factory, engine) -> None:  # noqa: F811
    app = build_rdc(tmp_path_factory.mktemp("heaprdc") / "heap_rdc", "compute_75",
                    "heap_app.cu")
    res = run_on_engine(gdevd, app, engine)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout == OUTPUT, res.stdout
