"""Cooperative launches in an nvcc-built application (tests/programs/apps/coop_app.cu: a
reductionMultiBlockCG-style grid reduction sized by the occupancy API and the
multiprocessor count through cudaLaunchCooperativeKernel, an oversized grid refused with
cudaErrorCooperativeLaunchTooLarge, and a Jacobi relaxation with grid barriers in its loop
through cudaLaunchKernelEx's cooperative attribute), run unchanged on a mounted gdevd
through gdev-py's libcudart.so and libcuda.so.1 on each engine; the application checks its
own results."""

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
APP = Path(__file__).resolve().parent / "apps" / "coop_app.cu"


@pytest.fixture(scope="module")
def coop_app(tmp_path_factory) -> Path:
    need_cuda_h()
    clib_dir()
    out = tmp_path_factory.mktemp("coop") / "coop_app"
    subprocess.run([nvcc(), "-cudart", "shared", "-gencode", "arch=compute_75,code=compute_75",
                    "-o", str(out), str(APP)], check=True, capture_output=True)
    return out


@pytest.mark.parametrize("engine", ["interp", "jit"])
def test_grid_sync_application_on_each_engine(gdevd, coop_app, engine) -> None:  # noqa: F811
    write_once(gdevd.proc_path("ptx_engine"), engine.encode())
    try:
        res = subprocess.run([str(ROOT / "scripts" / "gdev-run"), "--mount", gdevd.mount,
                              str(coop_app)], capture_output=True, text=True, timeout=600)
    finally:
        write_once(gdevd.proc_path("ptx_engine"), b"auto")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "\nreduce ok\njacobi ok\n" in res.stdout, res.stdout
    # 256-thread blocks: 4 per multiprocessor, 40 multiprocessors
    assert "reduce blocks=160 per_sm=4 " in res.stdout, res.stdout
    if engine == "jit":      # both kernels ran compiled
        rows = [r.split() for r in read_text(gdevd.proc_path("ptx_modules")).splitlines()[1:]]
        assert any(r[2] == "jit" and r[4] == r[5] == "2" for r in rows), rows
