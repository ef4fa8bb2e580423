"""The ioctl server and its handlers without FUSE (the ``loopback`` fixture: a real runtime,
session table and server, a libgdev Connection in a worker thread), each handler's refusals
checked by errno, ending with the runtime's invariant check (like s3ql's fsck)."""

from __future__ import annotations

import errno
import os
import struct

import pytest

from libgdev import abi
from libgdev.connection import Connection
from tests.loopback import Loopback, errno_of


def copy_fields(**kw) -> dict:
    return {"dev_addr": 0x20000000, "size": 16, "host_offset": 0, "buf_id": 0,
            "host_kind": abi.HOST_INLINE, **kw}


def test_handler_refusals(loopback: Loopback) -> None:
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
        # an unknown launch flag (LAUNCH_COOPERATIVE is the only one)
        assert errno_of(conn, "GLAUNCH", b"add" + bytes(4), flags=2, **launch) == errno.EINVAL
        assert errno_of(conn, "MODULE_LAUNCH", module_id=1, function=0, grid_x=1, grid_y=1,
                        grid_z=1, block_x=1, block_y=1, block_z=1, shared_dynamic=0,
                        params_len=0, flags=0x80) == errno.EINVAL
        assert errno_of(conn, "GQUERY", type=0xDEAD) == errno.EINVAL
    loopback.serve(client)


def test_shared_buffer_ranges_are_checked(loopback: Loopback) -> None:
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
    loopback.serve(client)


def test_garbage_ends_only_the_connection(loopback: Loopback) -> None:
    def client(conn: Connection, session) -> None:
        conn.sock.sendall(struct.pack("<Q", 0xBAD) * 4)
        with pytest.raises(OSError):
            conn.call(abi.GET_VERSION, abi.Empty())
        assert session.closed  # the session ended with its connection
    loopback.serve(client)
