"""The ioctl server and its handlers without FUSE: a real runtime and session table in a trio
loop, a libgdev Connection in a worker thread, and each handler's refusals checked by errno,
ending with the runtime's invariant check (like s3ql's fsck)."""

from __future__ import annotations

import errno
import os
import struct
import tempfile

import pytest
import trio

from gdevd import runtime as rt
from gdevd.ioctl.server import IoctlServer
from gdevd.ioctl.session import Opener, SessionTable
from libgdev import abi
from libgdev.connection import Connection


def serve(client) -> None:
    """Run ``client(conn, ticket_token, sessions)`` in a thread against a live server."""
    async def main(path: str) -> None:
        async with rt.GdevSystem(rt.GdevConfig(memory=64 << 20)) as system:
            sessions = SessionTable(system, path)
            async with trio.open_nursery() as nursery:
                await nursery.start(IoctlServer(sessions, path).serve)
                me = Opener(os.getuid(), os.getgid(), os.getpid(), os.getpid())
                session = await sessions.open(0, me)

                def run_client() -> None:
                    conn = Connection.connect(path)
                    try:
                        conn.call(abi.HELLO, abi.Hello(token=session.token))
                        client(conn, session)
                    finally:
                        conn.close()
                await trio.to_thread.run_sync(run_client)
                await sessions.end_all()
                nursery.cancel_scope.cancel()
            system.check_invariants()
            assert all(v.memory_used == 0 and v.dma_used == 0 for v in system.virtual)
    with tempfile.TemporaryDirectory(prefix="gdevd-unit-") as tmp:
        trio.run(main, os.path.join(tmp, "s"))


def errno_of(conn: Connection, name: str, tail: bytes = b"", **fields) -> int:
    try:
        cmd = abi.BY_NAME[name]
        conn.call(cmd, cmd.request.cls(**fields), tail)
    except OSError as exc:
        return exc.errno
    return 0


def copy_fields(**kw) -> dict:
    return {"dev_addr": 0x20000000, "size": 16, "host_offset": 0, "buf_id": 0,
            "host_kind": abi.HOST_INLINE, **kw}


def test_handler_refusals() -> None:
    def client(conn: Connection, session) -> None:
        a = conn.call(abi.GMALLOC, abi.Size(size=4096)).fields.addr
        assert errno_of(conn, "HELLO", token=session.token) == errno.EALREADY
        assert errno_of(conn, "GFREE", addr=1) == errno.ENOENT
        assert errno_of(conn, "GFREE_DMA", buf_id=99) == errno.ENOENT
        assert errno_of(conn, "GMEMCPY_TO_DEVICE", b"x" * 15, **copy_fields()) == errno.EINVAL
        assert errno_of(conn, "GMEMCPY_TO_DEVICE", b"x" * 16, **copy_fields(dev_addr=a)) == 0
        assert errno_of(conn, "GMEMCPY_TO_DEVICE",
                        **copy_fields(host_kind=abi.HOST_STAGING)) == errno.EINVAL
        assert errno_of(conn, "GMEMCPY_TO_DEVICE", **copy_fields(host_kind=7)) == errno.EINVAL
        assert errno_of(conn, "GMEMCPY_FROM_DEVICE_ASYNC", **copy_fields()) == errno.EINVAL
        assert errno_of(conn, "GMEMCPY_FROM_DEVICE", **copy_fields(
            host_kind=abi.HOST_DMA, buf_id=5)) == errno.ENOENT
        assert errno_of(conn, "GSYNC", id=0, flags=0x80, timeout_us=0) == errno.EINVAL
        assert errno_of(conn, "GREF", addr=a, size=4096, slave=12345) == errno.ENOENT
        launch = dict(code_addr=a, code_size=16, data_addr=0, grid_x=1, grid_y=1, grid_z=1,
                      block_x=1, block_y=1, block_z=1, shared_dynamic=0, name_len=3,
                      params_len=4)
        assert errno_of(conn, "GLAUNCH", b"abc", **launch) == errno.EINVAL  # tail too short
        assert errno_of(conn, "GLAUNCH", b"\xff\xfe\xfd" + bytes(4), **launch) == errno.EINVAL
        assert errno_of(conn, "GQUERY", type=0xDEAD) == errno.EINVAL
    serve(client)


def test_shared_buffer_ranges_are_checked() -> None:
    def client(conn: Connection, session) -> None:
        a = conn.call(abi.GMALLOC, abi.Size(size=1 << 20)).fields.addr
        reply = conn.call(abi.GMALLOC_DMA, abi.Size(size=8192))
        os.close(reply.fd)
        buf = reply.fields.buf_id
        for offset, size in ((8192, 1), (4096, 4097), (2**63, 2**63)):
            assert errno_of(conn, "GMEMCPY_TO_DEVICE", **copy_fields(
                dev_addr=a, host_kind=abi.HOST_DMA, buf_id=buf, host_offset=offset,
                size=size)) == errno.EFAULT
        stg = conn.call(abi.GET_STAGING, abi.Empty())
        os.close(stg.fd)
        assert errno_of(conn, "GMEMCPY_FROM_DEVICE", **copy_fields(
            dev_addr=a, host_kind=abi.HOST_STAGING, host_offset=stg.fields.size - 8,
            size=16)) == errno.EFAULT
        assert errno_of(conn, "GVIRTGET", buf_id=buf, offset=8192) == errno.EFAULT
        assert conn.call(abi.GVIRTGET, abi.Virt(buf_id=buf, offset=8)).fields.addr == \
            reply.fields.addr + 8
        assert conn.call(abi.GFREE_DMA, abi.BufId(buf_id=buf)).fields.size == 8192
    serve(client)


def test_garbage_ends_only_the_connection() -> None:
    def client(conn: Connection, session) -> None:
        conn.sock.sendall(struct.pack("<Q", 0xBAD) * 4)
        with pytest.raises(OSError):
            conn.call(abi.GET_VERSION, abi.Empty())
        assert session.closed  # the session ended with its connection
    serve(client)
