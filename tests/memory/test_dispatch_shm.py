"""The GSHM* handlers without FUSE: the real ioctl server (the ``loopback`` fixture), a
libgdev Connection, each command's results and refusals by errno, then the runtime's
invariants."""

from __future__ import annotations

import errno

from libgdev import abi
from libgdev.connection import Connection
from libgdev.constants import GDEV_IPC_CREAT, GDEV_IPC_RMID, GDEV_IPC_SET, GDEV_IPC_STAT
from tests.loopback import Loopback, errno_of


def test_shm_commands_through_the_server(loopback: Loopback) -> None:
    def client(conn: Connection, session: object) -> None:
        sid = conn.call(abi.GSHMGET,
                        abi.ShmGet(key=321, size=8192, flags=GDEV_IPC_CREAT | 0o640)).fields.id
        assert conn.call(abi.GSHMGET, abi.ShmGet(key=321, size=0, flags=0)).fields.id == sid
        assert errno_of(conn, "GSHMGET", key=322, size=4096, flags=0) == errno.ENOENT
        assert errno_of(conn, "GSHMGET", key=1, size=4096, flags=0o4000) == errno.EINVAL
        addr = conn.call(abi.GSHMAT, abi.ShmAt(id=sid, addr=0, flags=0)).fields.addr
        assert errno_of(conn, "GSHMAT", id=sid, addr=addr, flags=0) == errno.EINVAL
        assert errno_of(conn, "GSHMAT", id=sid + 1, addr=0, flags=0) == errno.EINVAL
        st = conn.call(abi.GSHMCTL,
                       abi.ShmCtl(id=sid, cmd=GDEV_IPC_STAT, uid=0, gid=0, mode=0)).fields
        assert (st.key, st.id, st.size, st.mode, st.nattch) == (321, sid, 8192, 0o640, 1)
        assert errno_of(conn, "GSHMCTL", id=sid, cmd=GDEV_IPC_STAT, uid=1, gid=0,
                        mode=0) == errno.EINVAL
        conn.call(abi.GSHMCTL,
                  abi.ShmCtl(id=sid, cmd=GDEV_IPC_SET, uid=st.uid, gid=st.gid, mode=0o600))
        assert errno_of(conn, "GSHMCTL", id=sid, cmd=9, uid=0, gid=0, mode=0) == errno.EINVAL
        conn.call(abi.GSHMCTL, abi.ShmCtl(id=sid, cmd=GDEV_IPC_RMID, uid=0, gid=0, mode=0))
        assert errno_of(conn, "GSHMDT", addr=addr + 4096) == errno.EINVAL
        conn.call(abi.GSHMDT, abi.Addr(addr=addr))
        assert errno_of(conn, "GSHMCTL", id=sid, cmd=GDEV_IPC_STAT, uid=0, gid=0,
                        mode=0) == errno.EINVAL
        conn.call(abi.GSHMGET, abi.ShmGet(key=0, size=4096, flags=0o600))  # left for the end
    loopback.serve(client)
