"""Shared memory and accounting through the real daemon: a second, unprivileged user, the
/proc tree, libgdev and the CUDA binding agree (uses tests/daemon's mount helpers)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import numpy as np
import pytest

import libgdev
from libgdev import cuda

pytestmark = pytest.mark.mount

_spec = importlib.util.spec_from_file_location(
    "daemon_helpers", Path(__file__).parents[1] / "daemon" / "conftest.py")
assert _spec is not None and _spec.loader is not None
helpers = importlib.util.module_from_spec(_spec)
sys.modules["daemon_helpers"] = helpers
_spec.loader.exec_module(helpers)
unprivileged = helpers.unprivileged          # the session fixture (useradd when root)


@pytest.fixture(scope="module")
def gdevd():
    d = helpers.start_gdevd()
    try:
        yield d
        assert "Traceback" not in d.log_text(), d.log_text()
    finally:
        helpers.stop_gdevd(d)


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def test_shm_between_processes_with_modes_checked(gdevd, unprivileged) -> None:
    uid, gid = unprivileged
    with libgdev.gopen(0, gdevd.mount) as h:
        private = h.gshmget(0x5EED, 1 << 20, libgdev.GDEV_IPC_CREAT | 0o600)
        shared = h.gshmget(0x5EEE, 1 << 20, libgdev.GDEV_IPC_CREAT | 0o666)
        va = h.gshmat(shared)
        h.gmemcpy_to_device(va, np.arange(256, dtype=np.uint32))
        table = _read(gdevd.proc_path("shm")).splitlines()
        assert any(line.split()[:2] == [str(0x5EED), str(private)] for line in table)
        code = f"""
def expect(err, fn, *a):
    try:
        fn(*a)
    except OSError as e:
        assert e.errno == err, (fn, e)
    else:
        raise AssertionError(fn)
with libgdev.gopen(1) as h:
    expect(errno.EACCES, h.gshmget, {0x5EED}, 0, 0o600)
    expect(errno.EACCES, h.gshmat, {private})
    expect(errno.EACCES, h.gshmctl, {private}, libgdev.GDEV_IPC_STAT)
    expect(errno.EPERM, h.gshmctl, {private}, libgdev.GDEV_IPC_RMID)
    expect(errno.EPERM, h.gshmctl, {shared}, libgdev.GDEV_IPC_SET,
           dict(uid=os.getuid(), gid=os.getgid(), mode=0o666))
    sid = h.gshmget({0x5EEE}, 0, 0o666)
    va = h.gshmat(sid)
    out = numpy.zeros(256, numpy.uint32)
    h.gmemcpy_from_device(out, va)
    assert (out == numpy.arange(256)).all()
    st = h.gshmctl(sid, libgdev.GDEV_IPC_STAT)
    assert st.nattch == 2 and st.cuid == 0, st
    h.gshmdt(va)
    mine = h.gshmget(0, 4096, 0o600)
    assert h.gshmctl(mine, libgdev.GDEV_IPC_STAT).uid == os.getuid()
    h.gshmctl(mine, libgdev.GDEV_IPC_RMID)
print("ok")
"""
        r = helpers.run_as(unprivileged, code, gdevd.env())
        assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
        st = h.gshmctl(shared, libgdev.GDEV_IPC_STAT)
        assert st.nattch == 1 and st.lpid != os.getpid() and (uid, gid) != (0, 0)
        h.gshmctl(private, libgdev.GDEV_IPC_RMID)
        h.gshmctl(shared, libgdev.GDEV_IPC_RMID)
        h.gshmdt(va)
    assert len(_read(gdevd.proc_path("shm")).splitlines()) == 1       # the header only


def test_cumemgetinfo_gquery_and_proc_agree(gdevd) -> None:
    drv = cuda.bind(helpers_backend(gdevd.mount))
    drv.cuInit(0)
    ctx = drv.cuCtxCreate(0, 2)
    try:
        p = drv.cuMemAlloc(3 << 20)
        free, total = drv.cuMemGetInfo()
        used = int(_read(gdevd.proc_path("vd2", "memory_used")))
        size = int(_read(gdevd.proc_path("vd2", "memory_size")))
        assert total == size and free == size - used and used >= 3 << 20
        sid = drv.cuShmGet(0, 1 << 20, 0o600)
        d = drv.cuShmAt(sid)
        assert drv.cuMemGetInfo()[0] == free - (1 << 20)
        assert drv.cuShmCtl(sid, 1).nattch == 1
        drv.cuShmCtl(sid, 3)
        drv.cuShmDt(d)
        drv.cuMemFree(p)
        assert drv.cuMemGetInfo()[0] == free + (3 << 20)
    finally:
        drv.cuCtxDestroy(ctx)
        drv.shutdown()


def helpers_backend(mount: str):  # type: ignore[no-untyped-def]
    """libgdev's verbs on ``mount`` as a CUDA backend."""
    class Mounted:
        GdevKernel = libgdev.GdevKernel

        def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
            return getattr(libgdev, name)

        def gopen(self, minor: int):  # type: ignore[no-untyped-def]
            return libgdev.gopen(minor, mount)

        def gdevice_count(self) -> int:
            return libgdev.gdevice_count(mount)
    return cuda.ModuleBackend(Mounted())
