"""CUDA IPC in an nvcc-built application (tests/programs/apps/ipc_app.cu: simpleIPC's shape,
a parent and three forked children on different devices sharing one buffer and an event per
child through handles sent down pipes), run unchanged on a mounted gdevd through gdev-py's
libcudart.so and libcuda.so.1 on each engine; the parent checks every child's slice after
synchronizing on that child's event, and that its own handle is refused in its own process
(cudaErrorDeviceUninitialized, CUDA's "invalid device context")."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clib.runner import build_cuda
from tests.daemon.conftest import gdevd  # noqa: F401  (the module-scoped daemon)

from .apprun import run_on_engine

pytestmark = pytest.mark.mount
APP = Path(__file__).resolve().parent / "apps" / "ipc_app.cu"


@pytest.fixture(scope="module")
def ipc_app(tmp_path_factory) -> Path:
    return build_cuda(APP, tmp_path_factory.mktemp("ipc") / "ipc_app")


@pytest.mark.parametrize("engine", ["interp", "jit"])
def test_processes_share_memory_and_events_on_each_engine(gdevd, ipc_app,  # noqa: F811
                                                          engine) -> None:
    res = run_on_engine(gdevd, ipc_app, engine)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.splitlines() == ["own handle in own process: cudaErrorDeviceUninitialized",
                                       "ipc_app ok children=3"], res.stdout + res.stderr
    assert Path(gdevd.proc_path("shm")).read_text().count("\n") == 1    # nothing left
