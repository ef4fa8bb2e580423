"""The grid's contexts are guests of the daemon's guest class (on a guest vGPU, or opened by a
SCHED_IDLE process); a host's context is not."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from libgdev.grid import context
from tests.daemon.conftest import gdevd  # noqa: F401  (the mount fixture)

pytestmark = pytest.mark.mount

LAUNCH = """
from libgdev.grid import context
cuda, ctx = context.open_guest({mount!r}, {minor})
with context.current(cuda, ctx):
    k = context.null_kernel()
    f = cuda.cuModuleGetFunction(cuda.cuModuleLoadData(k.ptx), k.name)
    out = cuda.cuMemAlloc(4)
    cuda.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, None, [out, 0])
    cuda.cuCtxSynchronize()
print(context.is_guest({mount!r}), cuda.cuCtxGetPriority(ctx))
"""


def run_guest(mount: str, minor: int, idle: bool) -> str:
    prefix = "import os; os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))\n"
    code = (prefix if idle else "") + LAUNCH.format(mount=mount, minor=minor)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_guest_vgpu_and_sched_idle_openers_are_guests_hosts_are_not(gdevd):  # noqa: F811
    assert run_guest(gdevd.mount, 0, idle=False) == f"False {context.GUEST_PRIORITY}"
    assert run_guest(gdevd.mount, 0, idle=True) == f"True {context.GUEST_PRIORITY}"
    with open(gdevd.proc_path("vd1", "guest"), "w") as f:
        f.write("1")
    try:
        assert run_guest(gdevd.mount, 1, idle=False) == f"True {context.GUEST_PRIORITY}"
    finally:
        with open(gdevd.proc_path("vd1", "guest"), "w") as f:
            f.write("0")
    assert context.is_guest(gdevd.mount, pid=os.getpid()) is None  # no context of ours
