"""The stream commands through the ioctl server (the loopback fixture: real sockets, no
FUSE): refusals by errno, a stream's copies and fences, and a hostile client that creates
streams without end."""

from __future__ import annotations

import errno

from gdevd.ioctl.session import Session
from libgdev import abi
from libgdev.connection import Connection
from tests.loopback import Loopback, errno_of


def _inline(dev: int, size: int, stream: int) -> abi.MemcpyHost:
    """An inline copy of ``size`` bytes at ``dev``, ordered in ``stream``."""
    return abi.MemcpyHost(dev_addr=dev, size=size, host_offset=0, buf_id=0,
                          host_kind=abi.HOST_INLINE, stream=stream)


def test_stream_commands_and_their_refusals(loopback: Loopback) -> None:
    def client(conn: Connection, session: Session) -> None:
        a = conn.call(abi.GMALLOC, abi.Size(4096)).fields.addr
        st = conn.call(abi.STREAM_CREATE, abi.StreamCreate(abi.STREAM_NON_BLOCKING)).fields.stream
        assert st >= 1
        conn.call(abi.GMEMCPY_TO_DEVICE, _inline(a, 16, st), b"x" * 16)
        out = conn.call(abi.GMEMCPY_FROM_DEVICE, _inline(a, 16, st))
        assert bytes(out.tail) == b"x" * 16
        fence = conn.call(abi.GMEMCPY_ASYNC, abi.Dtod(a + 64, a, 16, st)).fields.id
        conn.call(abi.STREAM_WAIT, abi.StreamWait(stream=0, fence=fence))
        conn.call(abi.STREAM_SYNC, abi.StreamSync(stream=st, flags=0, timeout_us=0))
        conn.call(abi.STREAM_SYNC, abi.StreamSync(0, abi.STREAM_SYNC_TIMEOUT, 0))
        assert errno_of(conn, "STREAM_CREATE", flags=0x2) == errno.EINVAL
        assert errno_of(conn, "STREAM_DESTROY", stream=0) == errno.EINVAL
        assert errno_of(conn, "STREAM_DESTROY", stream=st + 1) == errno.EINVAL
        assert errno_of(conn, "STREAM_WAIT", stream=st, fence=4096) == errno.EINVAL
        assert errno_of(conn, "STREAM_SYNC", stream=st, flags=2, timeout_us=0) == errno.EINVAL
        assert errno_of(conn, "GMEMCPY", dst_addr=a, src_addr=a + 64, size=16,
                        stream=99) == errno.EINVAL
        assert errno_of(conn, "GMEMCPY_TO_DEVICE", b"x" * 16, **_inline(a, 16, 99)._asdict()) \
            == errno.EINVAL
        conn.call(abi.STREAM_DESTROY, abi.Stream(st))
        assert errno_of(conn, "STREAM_SYNC", stream=st, flags=0, timeout_us=0) == errno.EINVAL
        made = 0
        while errno_of(conn, "STREAM_CREATE", flags=0) == 0:     # a greedy tenant: bounded
            made += 1
        assert made == 1023 and errno_of(conn, "STREAM_CREATE", flags=0) == errno.EMFILE
        conn.call(abi.GBARRIER, abi.Empty())
    loopback.serve(client)


def test_a_client_that_predates_streams_sends_the_legacy_stream() -> None:
    # stream took the place of padding: the old layouts' bytes decode as stream 0
    assert abi.Launch(*range(1, 13)).stream == abi.MemcpyHost(1, 2, 3, 4, 5).stream == 0
    assert abi.ModuleLaunch(*range(1, 11)).stream == abi.Dtod(1, 2, 3).stream == 0
    assert abi.GMEMCPY_TO_DEVICE.request.fields[-1] == ("stream", "I")
    for cmd in (abi.GLAUNCH, abi.MODULE_LAUNCH):     # then the launch flags (8 bytes more)
        assert cmd.request.fields[-3:] == (("stream", "I"), ("flags", "I"), ("_pad0", "I"))
    assert abi.GMEMCPY.request.fields[-2:] == (("stream", "I"), ("_pad0", "I"))
    assert abi.GMEMCPY.request.struct.size == 32
