"""Cooperative launches in an nvcc-built application (tests/programs/apps/coop_app.cu: a
reductionMultiBlockCG-style grid reduction sized by the occupancy API and the
multiprocessor count through cudaLaunchCooperativeKernel, an oversized grid refused with
cudaErrorCooperativeLaunchTooLarge, and a Jacobi relaxation with grid barriers in its loop
through cudaLaunchKernelEx's cooperative attribute), run unchanged on a mounted gdevd
through gdev-py's libcudart.so and libcuda.so.1 on each engine; the application checks its
own results."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clib.runner import build_cuda
from tests.daemon.conftest import gdevd  # noqa: F401  (the module-scoped daemon)

from .apprun import module_rows, run_on_engine

pytestmark = pytest.mark.mount
APP = Path(__file__).resolve().parent / "apps" / "coop_app.cu"


@pytest.fixture(scope="module")
def coop_app(tmp_path_factory) -> Path:
    return build_cuda(APP, tmp_path_factory.mktemp("coop") / "coop_app")


@pytest.mark.parametrize("engine", ["interp", "jit"])
def test_grid_sync_application_on_each_engine(gdevd, coop_app, engine) -> None:  # noqa: F811
    res = run_on_engine(gdevd, coop_app, engine)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "\nreduce ok\njacobi ok\n" in res.stdout, res.stdout
    # 256-thread blocks: 4 per multiprocessor, 40 multiprocessors
    assert "reduce blocks=160 per_sm=4 " in res.stdout, res.stdout
    if engine == "jit":      # both kernels ran compiled
        rows = module_rows(gdevd)
        assert any(r[2] == "jit" and r[4] == r[5] == "2" for r in rows), rows
