"""The grid's contexts make themselves guests of the daemon's guest class (SET_GUEST), as do
contexts on a guest vGPU or opened by a SCHED_IDLE process; a host's context is not one, and
a tenant's guest may not make itself a host."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import libgdev
from libgdev.grid import context
from tests.daemon.conftest import gdevd, run_as, unprivileged  # noqa: F401  (fixtures)

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


def test_grid_contexts_are_guests_whatever_their_vgpu_and_policy(gdevd):  # noqa: F811
    assert run_guest(gdevd.mount, 0, idle=False) == f"True {context.GUEST_PRIORITY}"
    assert run_guest(gdevd.mount, 0, idle=True) == f"True {context.GUEST_PRIORITY}"
    with open(gdevd.proc_path("vd1", "guest"), "w") as f:
        f.write("1")
    try:
        assert run_guest(gdevd.mount, 1, idle=False) == f"True {context.GUEST_PRIORITY}"
    finally:
        with open(gdevd.proc_path("vd1", "guest"), "w") as f:
            f.write("0")
    assert context.is_guest(gdevd.mount, pid=os.getpid()) is None  # no context of ours


TENANT = """
h = libgdev.gopen({minor}, {mount!r})
print(h.gget_guest(), h.gset_guest(True), h.gget_guest(), h.gset_guest(None))
try:
    print(h.gset_guest(False))
except OSError as exc:
    print(errno.errorcode[exc.errno], "only root may make a guest context a host" in str(exc))
print(h.gget_guest())
"""


def test_a_tenant_demotes_itself_but_may_not_promote_a_guest_vgpus_context(
        gdevd, unprivileged):  # noqa: F811
    def tenant(minor: int) -> list[str]:
        done = run_as(unprivileged, TENANT.format(mount=gdevd.mount, minor=minor), gdevd.env())
        assert done.returncode == 0, done.stderr
        return done.stdout.split("\n")[:3]
    assert tenant(0) == ["False True True False", "False", "False"]
    with open(gdevd.proc_path("vd1", "guest"), "w") as f:
        f.write("1")
    try:
        assert tenant(1) == ["True True True True", "EPERM True", "True"]
    finally:
        with open(gdevd.proc_path("vd1", "guest"), "w") as f:
            f.write("0")
    with libgdev.gopen(1, gdevd.mount) as h:      # root may (and its host is not a guest)
        assert h.gget_guest() is False and h.gset_guest(True) is True
        assert context.is_guest(gdevd.mount) is True
        assert h.gset_guest(False) is False and context.is_guest(gdevd.mount) is False
