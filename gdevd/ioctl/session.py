"""Sessions: one open device file + one socket connection + one runtime handle.

Opening ``/dev/gdevN`` creates a :class:`Session` (the runtime context and a one-time token
bound to the opener's uid, gid and process).  HELLO on the ioctl socket claims it: the token
must match, must not have been used, and the peer's ``SO_PEERCRED`` must name the opener's
process and user; only such a HELLO consumes the token, so a token that leaked to another
process cannot be burnt by it (the attempt is logged and the opener may still claim it).
Releasing the file or closing the socket ends the session: the connection is cancelled,
shared buffers are dropped and the handle is closed (``gclose`` frees all it held).
``end`` is idempotent and safe from either side, in any order.
"""

from __future__ import annotations

import errno
import hmac
import logging
import secrets
from dataclasses import dataclass, field

import trio

from gdevd import runtime as rt
from gdevd.errors import GdevError
from gdevd.ioctl import backend

log = logging.getLogger("gdevd.session")


@dataclass(frozen=True)
class Opener:
    """Who opened the device file: uid, gid, the calling thread, its process (tgid) and the
    process's name (its ``comm``, for listings only: the opener chooses it)."""

    uid: int
    gid: int
    pid: int
    tgid: int
    name: str = ""

    @classmethod
    def from_ctx(cls, uid: int, gid: int, pid: int) -> Opener:
        """Build from a FUSE request context (``pid`` is the calling thread's id)."""
        return cls(uid, gid, pid, *thread_group_of(pid))


def thread_group_of(pid: int) -> tuple[int, str]:
    """The process id (tgid) and name of thread ``pid``; ``(pid, "")`` if /proc cannot tell."""
    tgid, name = pid, ""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"Name:"):
                    name = line[5:].strip().decode(errors="replace")
                elif line.startswith(b"Tgid:"):
                    return int(line.split()[1]), name
    except (OSError, ValueError):
        pass
    return tgid, name


@dataclass(eq=False)
class Session:
    """One client context.  ``handle`` is the runtime's; ``dma`` maps buf ids to pinned
    buffers; ``staging`` is created on first use."""

    id: int
    minor: int
    opener: Opener
    token: bytes
    handle: rt.Handle
    claimed: bool = False
    closed: bool = False
    dma: dict[int, rt.DmaBuffer] = field(default_factory=dict)
    staging: rt.DmaBuffer | None = None
    next_buf: int = 1
    scope: trio.CancelScope | None = None
    bad_messages: int = 0

    def check_open(self) -> None:
        """Raise EBADF once the session has ended."""
        if self.closed:
            raise GdevError(errno.EBADF, f"session {self.id} has ended")

    def add_dma(self, buf: rt.DmaBuffer) -> int:
        """Register a pinned buffer; return its buf id."""
        buf_id = self.next_buf
        self.next_buf += 1
        self.dma[buf_id] = buf
        return buf_id


class SessionTable:
    """All live sessions of the daemon, by id and by token."""

    def __init__(self, system: rt.GdevSystem, socket_path: str) -> None:
        self.system = system
        self.socket_path = socket_path
        self.by_id: dict[int, Session] = {}
        self._by_token: dict[bytes, Session] = {}
        self._next_id = 1

    async def open(self, minor: int, opener: Opener) -> Session:
        """Create the context for an open of ``/dev/gdev<minor>`` (gopen)."""
        handle = await backend.open_handle(self.system, minor, opener)
        session = Session(self._next_id, minor, opener, secrets.token_bytes(32), handle)
        self._next_id += 1
        self.by_id[session.id] = session
        self._by_token[session.token] = session
        log.debug("session %d: gdev%d opened by pid %d uid %d", session.id, minor,
                  opener.tgid, opener.uid)
        return session

    def claim(self, token: bytes, pid: int, uid: int, gid: int) -> Session:
        """HELLO: bind the session of ``token`` to a connection whose peer credentials are
        (pid, uid, gid).  EACCES for an unknown, used or foreign token; a foreign attempt
        changes nothing."""
        session = self._by_token.get(bytes(token))
        if session is None or not hmac.compare_digest(session.token, bytes(token)):
            raise GdevError(errno.EACCES, "unknown or already used session token")
        o = session.opener
        if (pid, uid, gid) != (o.tgid, o.uid, o.gid):
            # A leaked token stays valid for its opener: a thief can neither use nor burn it.
            log.warning("session %d: token of pid %d uid %d presented by pid %d uid %d; "
                        "refused", session.id, o.tgid, o.uid, pid, uid)
            raise GdevError(errno.EACCES, f"token of pid {o.tgid} presented by pid {pid}")
        del self._by_token[session.token]  # one-time: only the opener consumes it
        session.claimed = True
        return session

    def peer_session(self, session_id: int, of: Session) -> Session:
        """Another live session of the same process (for gref's slave); ENOENT otherwise."""
        other = self.by_id.get(session_id)
        if other is None or other.closed or other.opener.tgid != of.opener.tgid:
            raise GdevError(errno.ENOENT, f"no session {session_id} of this process")
        return other

    async def end(self, session: Session, why: str) -> None:
        """End ``session`` (idempotent): cancel its connection, drop shared buffers, gclose."""
        if session.closed:
            return
        session.closed = True
        self.by_id.pop(session.id, None)
        self._by_token.pop(session.token, None)
        if session.scope is not None:
            session.scope.cancel()
        log.debug("session %d ends: %s", session.id, why)
        with trio.CancelScope(shield=True):
            await backend.close_handle(session)

    async def end_all(self) -> None:
        """End every session (daemon shutdown)."""
        for session in list(self.by_id.values()):
            await self.end(session, "daemon shutdown")
