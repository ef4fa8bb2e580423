"""The stream commands through the ioctl server (real sockets, no FUSE): refusals by errno,
a stream's copies and fences, and a hostile client that creates streams without end."""

from __future__ import annotations

import errno

from libgdev import abi
from libgdev.connection import Connection

from ..daemon.test_dispatch_inprocess import copy_fields, errno_of, serve


def test_stream_commands_and_their_refusals() -> None:
    def client(conn: Connection, session) -> None:  # type: ignore[no-untyped-def]
        a = conn.call("GMALLOC", size=4096).fields.addr
        st = conn.call("STREAM_CREATE", flags=abi.STREAM_NON_BLOCKING).fields.stream
        assert st >= 1
        conn.call("GMEMCPY_TO_DEVICE", b"x" * 16, **copy_fields(dev_addr=a, stream=st))
        out = conn.call("GMEMCPY_FROM_DEVICE", **copy_fields(dev_addr=a, stream=st))
        assert bytes(out.tail) == b"x" * 16
        fence = conn.call("GMEMCPY_ASYNC", dst_addr=a + 64, src_addr=a, size=16,
                          stream=st).fields.id
        conn.call("STREAM_WAIT", stream=0, fence=fence)
        conn.call("STREAM_SYNC", stream=st, flags=0, timeout_us=0)
        conn.call("STREAM_SYNC", stream=0, flags=abi.STREAM_SYNC_TIMEOUT, timeout_us=0)
        assert errno_of(conn, "STREAM_CREATE", flags=0x2) == errno.EINVAL
        assert errno_of(conn, "STREAM_DESTROY", stream=0) == errno.EINVAL
        assert errno_of(conn, "STREAM_DESTROY", stream=st + 1) == errno.EINVAL
        assert errno_of(conn, "STREAM_WAIT", stream=st, fence=4096) == errno.EINVAL
        assert errno_of(conn, "STREAM_SYNC", stream=st, flags=2, timeout_us=0) == errno.EINVAL
        assert errno_of(conn, "GMEMCPY", dst_addr=a, src_addr=a + 64, size=16,
                        stream=99) == errno.EINVAL
        assert errno_of(conn, "GMEMCPY_TO_DEVICE", b"x" * 16,
                        **copy_fields(dev_addr=a, stream=99)) == errno.EINVAL
        conn.call("STREAM_DESTROY", stream=st)
        assert errno_of(conn, "STREAM_SYNC", stream=st, flags=0, timeout_us=0) == errno.EINVAL
        made = 0
        while errno_of(conn, "STREAM_CREATE", flags=0) == 0:     # a greedy tenant: bounded
            made += 1
        assert made == 1023 and errno_of(conn, "STREAM_CREATE", flags=0) == errno.EMFILE
        conn.call("GBARRIER")
    serve(client)
