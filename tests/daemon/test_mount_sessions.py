"""Sessions through the real mount: concurrent clients on different vGPUs, the gate's token
rules, and the end of a session (file released, socket closed, process killed mid-call)
freeing everything while other clients carry on."""

from __future__ import annotations

import errno
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
from conftest import VD_256M, run_as

import libgdev
from libgdev import abi, gate

pytestmark = pytest.mark.mount


def _used(gdevd, minor: int) -> int:
    with open(gdevd.proc_path(f"vd{minor}", "memory_used")) as f:
        return int(f.read())


def _wait_used(gdevd, minor: int, want: int, timeout: float = 10.0) -> int:
    deadline = time.monotonic() + timeout
    while (used := _used(gdevd, minor)) != want and time.monotonic() < deadline:
        time.sleep(0.02)
    return used


CLIENT = """
minor = int(sys.argv[1]) if len(sys.argv) > 1 else {minor}
rng = numpy.random.default_rng(minor)
with libgdev.gopen(minor) as h:
    for size in (100, 70000, 3 << 20):
        a = h.gmalloc(size)
        x = rng.integers(0, 255, size, dtype=numpy.uint8)
        h.gmemcpy_to_device(a, x)
        y = numpy.empty_like(x)
        h.gmemcpy_from_device(y, a)
        assert (x == y).all(), size
        assert h.gfree(a) >= size
    print("ok", minor)
"""


def test_processes_on_different_vgpus_at_once(gdevd) -> None:
    procs = [subprocess.Popen([sys.executable, "-c", "import sys, numpy, libgdev\n" +
                               CLIENT.format(minor=m)], env=gdevd.env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for m in range(4)]
    outs = [p.communicate(timeout=120) for p in procs]
    for m, (p, (out, err)) in enumerate(zip(procs, outs, strict=True)):
        assert p.returncode == 0 and out.strip() == f"ok {m}", err
    assert [_wait_used(gdevd, m, 0) for m in range(4)] == [0, 0, 0, 0]


def test_verbs_errors_and_handle_lifecycle(gdevd) -> None:
    with libgdev.gopen(1, gdevd.mount) as h:
        assert h.abi_version() == (abi.ABI_VERSION, abi.FEATURES)
        assert h.gdevice_count() == 4 == libgdev.gdevice_count(gdevd.mount)
        assert h.gquery(libgdev.GDEV_QUERY_DEVICE_MEM_SIZE) == VD_256M
        a = libgdev.gmalloc(h, 8192)
        assert _used(gdevd, 1) >= 8192
        with pytest.raises(FileNotFoundError) as info:
            h.gfree(a + (1 << 30))
        assert isinstance(info.value, libgdev.GdevError)
        with pytest.raises(OSError) as info:
            h.gmalloc(1 << 40)
        assert info.value.errno == errno.ENOMEM
        with pytest.raises(OSError) as info:
            h.gtune(libgdev.GDEV_TUNE_MEMCPY_PIPELINE_COUNT, 99)
        assert info.value.errno == errno.EINVAL
        buf = h.gmalloc_dma(1 << 16)
        buf.array[:] = np.arange(1 << 16) % 251
        h.gmemcpy_to_device(a, buf.array[:4096])
        fence = h.gmemcpy_from_device_async(buf.array[8192:12288], a, 4096)
        h.gsync(fence, timeout=5)
        assert (buf.array[8192:12288] == buf.array[:4096]).all()
        assert h.gvirtget(buf.array[100:]) == buf.addr + 100
        b = h.gmalloc(4096)
        h.gmemcpy(b, a, 4096)
        out = np.empty(4096, np.uint8)
        h.gmemcpy_from_device(out, b)
        assert (out == buf.array[:4096]).all()
        assert h.gfree_dma(buf) == 1 << 16
        h.gbarrier()
    assert _wait_used(gdevd, 1, 0) == 0
    with pytest.raises(OSError) as info:
        h.gmalloc(10)
    assert info.value.errno == errno.EBADF


def test_gref_maps_into_another_session_of_the_process(gdevd) -> None:
    with libgdev.gopen(0, gdevd.mount) as master, libgdev.gopen(0, gdevd.mount) as slave:
        a = master.gmalloc(4096)
        master.gmemcpy_to_device(a, b"x" * 4096)
        s = master.gref(a, 4096, slave)
        out = bytearray(4096)
        slave.gmemcpy_from_device(out, s)
        assert out == b"x" * 4096
        slave.gunref(s)


def _raw_session(gdevd, minor: int = 0) -> tuple[int, gate.Ticket, socket.socket]:
    fd, ticket = gate.open_gate(minor, gdevd.mount)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(ticket.socket)
    return fd, ticket, sock


def _reply(sock: socket.socket) -> tuple[int, object] | None:
    rx = abi.ReceiveBuffer()
    while (frame := rx.next_frame()) is None:
        data = sock.recv(1 << 16)
        if not data:
            return None
        rx.feed(data)
    _, status, fields, _ = abi.decode_reply(frame)
    return status, fields


def test_token_is_one_time_and_bound_to_the_opener(gdevd, unprivileged) -> None:
    fd, ticket, sock = _raw_session(gdevd)
    try:
        sock.sendall(abi.encode_request("GQUERY", 1, type=1))
        assert _reply(sock) == (errno.EACCES, None)  # nothing before HELLO
        sock.sendall(abi.encode_request("HELLO", 2, token=ticket.token))
        assert _reply(sock)[0] == 0
        other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        other.connect(ticket.socket)
        other.sendall(abi.encode_request("HELLO", 1, token=ticket.token))  # replayed
        assert _reply(other) == (errno.EACCES, None)
        other.close()
    finally:
        sock.close()
        os.close(fd)
    fd, ticket = gate.open_gate(0, gdevd.mount)
    try:  # another user's process presents our token: refused, and the token stays ours
        code = f"""
import socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect({ticket.socket!r})
s.sendall(libgdev.abi.encode_request("HELLO", 1, token={ticket.token!r}))
rx = libgdev.abi.ReceiveBuffer()
while (f := rx.next_frame()) is None: rx.feed(s.recv(4096))
print(libgdev.abi.decode_reply(f)[1])
"""
        r = run_as(unprivileged, code, gdevd.env())
        assert r.stdout.strip() == str(errno.EACCES), r.stderr
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(ticket.socket)
        sock.sendall(abi.encode_request("HELLO", 1, token=ticket.token))
        assert _reply(sock)[0] == 0
        sock.close()
    finally:
        os.close(fd)


def test_closing_the_socket_ends_the_session(gdevd) -> None:
    fd, ticket, sock = _raw_session(gdevd, 2)
    sock.sendall(abi.encode_request("HELLO", 1, token=ticket.token))
    assert _reply(sock)[0] == 0
    sock.sendall(abi.encode_request("GMALLOC", 2, size=1 << 20))
    assert _reply(sock)[0] == 0 and _used(gdevd, 2) >= 1 << 20
    sock.close()
    assert _wait_used(gdevd, 2, 0) == 0
    with pytest.raises(OSError) as info:  # the file stays open but its session is gone
        os.pread(fd, 4096, 0)
    assert info.value.errno == errno.EBADF
    os.close(fd)


KILLED_COPY = """
h = libgdev.gopen(3)
a = h.gmalloc(48 << 20)
x = numpy.ones(48 << 20, numpy.uint8)
print("ready", flush=True)
while True:
    h.gmemcpy_to_device(a, x)
    h.gmemcpy_from_device(x, a)
"""


def test_sigkill_during_a_large_copy_frees_memory_and_spares_others(gdevd) -> None:
    victim = subprocess.Popen([sys.executable, "-c", "import sys, numpy, libgdev\n" +
                               KILLED_COPY], env=gdevd.env(), stdout=subprocess.PIPE, text=True)
    try:
        with libgdev.gopen(3, gdevd.mount) as other:
            b = other.gmalloc(4096)
            assert victim.stdout.readline().strip() == "ready"
            time.sleep(0.3)  # well inside the copy loop
            os.kill(victim.pid, signal.SIGKILL)
            other.gmemcpy_to_device(b, b"y" * 4096)
            assert victim.wait(10) == -signal.SIGKILL
            assert _wait_used(gdevd, 3, 4096) == 4096  # only other's page is left
            out = bytearray(4096)
            other.gmemcpy_from_device(out, b)
            assert out == b"y" * 4096
    finally:
        victim.kill()
        victim.wait()
    assert _wait_used(gdevd, 3, 0) == 0


def test_dma_buffer_objects_are_host_memory(gdevd) -> None:
    with libgdev.gopen(0, gdevd.mount) as h:
        a = h.gmalloc(4096)
        buf = h.gmalloc_dma(4096)
        np.asarray(buf)[:] = 9
        h.gmemcpy_to_device(a, buf)
        assert h.gvirtget(buf) == buf.addr
        back = h.gmalloc_dma(4096)
        h.gsync(h.gmemcpy_from_device_async(back, a))
        assert (back.array == 9).all()
