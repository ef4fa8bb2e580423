"""CUDA's virtual memory management through the real daemon and the Python client: a
buffer grown by mapping a second allocation behind the first, the counters of /proc/gdev,
an unprivileged tenant that can reach nothing of another's but what it was handed (the
exported descriptor, over a Unix socket), reasons carried to the client, and teardown when
a process dies holding reservations, mappings and exports (uses tests/daemon's helpers)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import libgdev

from .test_mounted import helpers, unprivileged  # noqa: F401  (the user fixture)

pytestmark = pytest.mark.mount
MiB = 1 << 20
RW = 3


@pytest.fixture(scope="module")
def gdevd():
    d = helpers.start_gdevd()
    try:
        yield d
        assert "Traceback" not in d.log_text(), d.log_text()
    finally:
        helpers.stop_gdevd(d)


def _used(gdevd, vd: int) -> int:
    return int(Path(gdevd.proc_path(f"vd{vd}", "memory_used")).read_text())


def test_grow_a_buffer_and_see_it_counted(gdevd) -> None:
    with libgdev.gopen(0, gdevd.mount) as h:
        base = _used(gdevd, 0)
        va = h.gvm_reserve(8 * MiB, 2 * MiB)
        first = h.gvm_create(2 * MiB)
        h.gvm_map(va, 2 * MiB, 0, first)
        h.gvm_set_access(va, 2 * MiB, RW)
        data = np.arange(MiB, dtype=np.uint32)             # 4 MiB: needs a second one
        with pytest.raises(OSError, match="runs past the end"):
            h.gmemcpy_to_device(va, data)
        second = h.gvm_create(2 * MiB)
        h.gvm_map(va + 2 * MiB, 2 * MiB, 0, second)
        h.gvm_set_access(va + 2 * MiB, 2 * MiB, RW)
        h.gmemcpy_to_device(va, data)
        out = np.zeros_like(data)
        h.gmemcpy_from_device(out, va)
        assert (out == data).all() and _used(gdevd, 0) == base + 4 * MiB
        with pytest.raises(OSError, match="GVM_MAP: .*overlaps"):
            h.gvm_map(va, 4096, 0, first)
        h.gvm_unmap(va, 4 * MiB)
        h.gvm_release(first)
        h.gvm_release(second)
        h.gvm_free(va, 8 * MiB)
        assert _used(gdevd, 0) == base


TENANT = """
def expect(err, fn, *a):
    try:
        fn(*a)
    except OSError as e:
        assert e.errno == err, (fn, e)
        return str(e)
    raise AssertionError(fn)
with libgdev.gopen(1) as h:
    reason = expect(errno.EINVAL, h.gvm_map, h.gvm_reserve(MIB), MIB, 0, 1)
    assert "no allocation handle 1" in reason, reason
    expect(errno.EINVAL, h.gvm_retain, {va})            # another context's address
    forged = os.memfd_create("forged")
    os.write(forged, b"GDEVVMM1" + bytes(24))
    expect(errno.EINVAL, h.gvm_import, forged)
    s = socket.socket(socket.AF_UNIX)
    s.connect({path!r})
    _, fds, _, _ = socket.recv_fds(s, 1, 1)
    mem = h.gvm_import(fds[0])                          # whoever holds the fd may import
    at = h.gvm_reserve(MIB)
    h.gvm_map(at, MIB, 0, mem)
    h.gvm_set_access(at, MIB, 1)                        # read only
    out = numpy.zeros(256, numpy.uint32)
    h.gmemcpy_from_device(out, at)
    assert (out == numpy.arange(256)).all(), out[:4]
    expect(errno.EFAULT, h.gmemcpy_to_device, at, out)
print("ok")
"""


def test_a_tenant_reaches_only_what_it_was_handed(gdevd, unprivileged) -> None:  # noqa: F811
    with libgdev.gopen(0, gdevd.mount) as h:
        va = h.gvm_reserve(MiB)
        mem = h.gvm_create(MiB)
        h.gvm_map(va, MiB, 0, mem)
        h.gvm_set_access(va, MiB, RW)
        h.gmemcpy_to_device(va, np.arange(256, dtype=np.uint32))
        fd = h.gvm_export(mem)
        shm = Path(gdevd.proc_path("shm")).read_text().splitlines()
        assert len(shm) == 2 and shm[1].split()[2] == str(MiB)     # the export is listed
        # (not tmp_path: the other user must reach the socket)
        base = tempfile.mkdtemp(prefix="gdev-vmm-")
        try:
            os.chmod(base, 0o755)
            path = os.path.join(base, "sock")
            listener = socket.socket(socket.AF_UNIX)
            listener.bind(path)
            os.chmod(path, 0o777)
            listener.listen(1)
            threading.Thread(target=_hand_over, args=(listener, fd), daemon=True).start()
            code = "MIB = 1 << 20\n" + TENANT.format(va=va, path=path)
            r = helpers.run_as(unprivileged, code, gdevd.env())
        finally:
            shutil.rmtree(base)
        assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
        os.close(fd)
        h.gvm_unmap(va, MiB)
        h.gvm_release(mem)                                  # the export goes with it
        assert len(Path(gdevd.proc_path("shm")).read_text().splitlines()) == 1


def _hand_over(listener: socket.socket, fd: int) -> None:
    conn, _ = listener.accept()
    with conn:
        socket.send_fds(conn, [b"f"], [fd])
    listener.close()


DYING = """
import os, signal, libgdev
h = libgdev.gopen(2)
va = h.gvm_reserve(8 << 20)
for i in range(3):
    mem = h.gvm_create(2 << 20)
    h.gvm_map(va + i * (2 << 20), 2 << 20, 0, mem)
h.gvm_set_access(va, 6 << 20, 3)
os.close(h.gvm_export(mem))
h.gvm_create(1 << 20)
print("holding", flush=True)
signal.pause()
"""


def test_a_dying_process_gives_everything_back(gdevd) -> None:
    env = {**gdevd.env(), "PYTHONPATH": str(Path(__file__).parents[2])}
    proc = subprocess.Popen([sys.executable, "-c", DYING], env=env, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "holding\n"
        assert _used(gdevd, 2) == 7 * MiB
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    deadline = time.monotonic() + 30          # the daemon's release runs after the death
    while _used(gdevd, 2) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _used(gdevd, 2) == 0
    assert len(Path(gdevd.proc_path("shm")).read_text().splitlines()) == 1
