"""D1: shared memory handed to a client cannot be resized under the daemon.

Before the fix, ``ftruncate(fd, 0)`` on a pinned or staging memfd and then a copy from it
killed gdevd with SIGBUS (every tenant lost its session).  Now both memfds arrive sealed: the
truncation fails with EPERM, the copy works, the bystander is unaffected.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

import pytest

from libgdev import abi
from tests.daemon.conftest import run_as, stop_gdevd, unprivileged  # noqa: F401
from tests.hostile.tenants import Bystander, RawSession, rss_kib, settled_rss, start_with

pytestmark = pytest.mark.mount


@pytest.fixture(scope="module")
def daemon():
    d = start_with(memory="256M")
    try:
        yield d
    finally:
        stop_gdevd(d)


def _resize_attempts(fd: int) -> list[int]:
    """The errno of each way a tenant could resize or reseal ``fd`` (0 if one worked)."""
    out = []
    for attack in (lambda: os.ftruncate(fd, 0), lambda: os.ftruncate(fd, 1 << 30),
                   lambda: fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE),
                   lambda: os.posix_fallocate(fd, 0, 1 << 30)):
        try:
            attack()
            out.append(0)
        except OSError as exc:
            out.append(exc.errno)
    return out


def test_pinned_and_staging_memfds_cannot_be_resized(daemon) -> None:
    bystander = Bystander(daemon.mount)
    base = rss_kib(daemon.proc.pid)
    raw = RawSession(daemon.mount)
    try:
        status, dma = raw.call("GMALLOC_DMA", size=1 << 20)
        assert status == 0
        status, stg = raw.call("GET_STAGING")
        assert status == 0 and len(raw.fds) == 2
        for fd in raw.fds:
            assert fcntl.fcntl(fd, fcntl.F_GET_SEALS) & fcntl.F_SEAL_SHRINK
            assert 0 not in _resize_attempts(fd)
            assert os.fstat(fd).st_size in (dma.size, stg.size)  # nothing changed
        status, dev = raw.call("GMALLOC", size=1 << 20)
        for kind, buf_id in ((abi.HOST_DMA, dma.buf_id), (abi.HOST_STAGING, 0)):
            status, _ = raw.call("GMEMCPY_TO_DEVICE", dev_addr=dev.addr, size=1 << 16,
                                 host_offset=0, buf_id=buf_id, host_kind=kind)
            assert status == 0
        assert daemon.proc.poll() is None
    finally:
        raw.close()
    bystander.check()
    bystander.close()
    assert settled_rss(daemon.proc.pid, base) <= base * 1.1


def test_unprivileged_raw_client_cannot_truncate_then_copy(daemon, unprivileged) -> None:  # noqa: F811
    bystander = Bystander(daemon.mount)
    code = """
import array, fcntl, socket
from tests.hostile.tenants import RawSession
raw = RawSession(os.environ["GDEV_MOUNT"])
st, dma = raw.call("GMALLOC_DMA", size=1 << 20)
st, stg = raw.call("GET_STAGING")
st, dev = raw.call("GMALLOC", size=1 << 20)
res = []
for fd in raw.fds:
    try:
        os.ftruncate(fd, 0); res.append(0)
    except OSError as e:
        res.append(e.errno)
for kind, buf in ((libgdev.abi.HOST_DMA, dma.buf_id), (libgdev.abi.HOST_STAGING, 0)):
    res.append(raw.call("GMEMCPY_FROM_DEVICE", dev_addr=dev.addr, size=4096,
                        host_offset=0, buf_id=buf, host_kind=kind)[0])
print(res)
"""
    env = {**daemon.env(), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    r = run_as(unprivileged, code, env, preload="import tests.hostile.tenants\n")
    assert r.stdout.strip() == str([errno.EPERM, errno.EPERM, 0, 0]), r.stderr
    assert daemon.proc.poll() is None
    bystander.check()
    bystander.close()
