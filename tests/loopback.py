"""The in-process loopback: a real gdevd ioctl server without FUSE (the ``loopback`` fixture).

A real runtime (:class:`gdevd.runtime.GdevSystem`), session table and ioctl server run in a
trio loop; the sessions are opened as the device file's open would open them, by this
process; each client connection is one end of a socketpair whose other end the server's
per-connection loop serves exactly as an accepted socket (admission, HELLO, dispatch).
The test body runs in a worker thread and may block on its sockets.  When it returns, an
optional ``check(system, sessions)`` runs on the loop, every session ends, and the runtime's
invariants are checked, with every vGPU's device and pinned memory back to zero (as s3ql's
tests end with fsck).
"""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import trio

from gdevd import runtime as rt
from gdevd.ioctl.server import IoctlServer
from gdevd.ioctl.session import Opener, Session, SessionTable
from libgdev import abi
from libgdev.connection import Connection

T = TypeVar("T")


@dataclass
class Peer:
    """What a loopback body sees from its worker thread: the system, the open sessions (in
    the order of their minors) and a way to connect."""

    system: rt.GdevSystem
    server: IoctlServer
    sessions: list[Session]
    _connect: Callable[[], socket.socket]

    def connect(self) -> socket.socket:
        """A new connection to the server, not yet bound to a session (no HELLO sent)."""
        return self._connect()

    def client(self, index: int = 0) -> Connection:
        """A libgdev Connection bound (HELLO) to session ``index``."""
        conn = Connection(self.connect())
        try:
            conn.call(abi.HELLO, abi.Hello(self.sessions[index].token))
        except BaseException:
            conn.close()
            raise
        return conn


def run(body: Callable[[Peer], T], minors: Sequence[int] = (0,), memory: int = 64 << 20,
        setup: Callable[[rt.GdevSystem], None] | None = None,
        check: Callable[[rt.GdevSystem, list[Session]], None] | None = None,
        **config: Any) -> T:
    """Open a session of this process on each of ``minors`` (vGPUs of a ``memory``-byte GPU
    configured by ``config``, after ``setup(system)``), run ``body(peer)`` in a worker
    thread, then ``check`` on the loop, end every session and check the invariants;
    ``body``'s result."""
    async def main(path: str) -> T:
        async with rt.GdevSystem(rt.GdevConfig(memory=memory, **config)) as system:
            if setup is not None:
                setup(system)
            table = SessionTable(system, path)
            server = IoctlServer(table, path)
            async with trio.open_nursery() as nursery:
                def connect() -> socket.socket:
                    mine, theirs = socket.socketpair()
                    trio.from_thread.run_sync(nursery.start_soon, server.serve_socket, theirs)
                    return mine
                me = Opener(os.getuid(), os.getgid(), os.getpid(), os.getpid())
                sessions = [await table.open(m, me) for m in minors]
                peer = Peer(system, server, sessions, connect)
                result = await trio.to_thread.run_sync(body, peer)
                if check is not None:
                    check(system, sessions)
                await table.end_all()
                nursery.cancel_scope.cancel()
            system.check_invariants()
            assert all(v.memory_used == 0 and v.dma_used == 0 for v in system.virtual)
        return result
    with tempfile.TemporaryDirectory(prefix="gdevd-loopback-") as tmp:
        return trio.run(main, os.path.join(tmp, "s"))  # a name only: nothing listens there


def serve(client: Callable[[Connection, Session], Any], minor: int = 0, **kw: Any) -> None:
    """The common case of :func:`run`: ``client(conn, session)`` with one bound Connection
    on a session of vGPU ``minor`` (the connection is closed afterwards)."""
    def body(peer: Peer) -> None:
        conn = peer.client()
        try:
            client(conn, peer.sessions[0])
        finally:
            conn.close()
    run(body, (minor,), **kw)


def errno_of(conn: Connection, name: str, tail: abi.Tail = b"", **fields: Any) -> int:
    """The errno with which the daemon refuses command ``name`` with ``fields`` (0: none)."""
    cmd = abi.BY_NAME[name]
    try:
        conn.call(cmd, cmd.request.cls(**fields), tail)
    except OSError as exc:
        return exc.errno or 0
    return 0


class Loopback:
    """The ``loopback`` fixture's value: :func:`run` and :func:`serve`."""

    run = staticmethod(run)
    serve = staticmethod(serve)
