"""The ioctl socket: a Unix stream listener served in the daemon's trio loop.

One task per connection reads frames (:class:`libgdev.abi.ReceiveBuffer`), decodes each,
runs its handler from :mod:`gdevd.ioctl.dispatch` and writes one reply, in order.  A session
is bound with HELLO (:meth:`SessionTable.claim`), after which the connection *is* the session:
its end (EOF, error, garbage that loses framing) ends the session, and the session's end
(release of the device file) cancels the connection.  A malformed message is answered with an
errno and changes nothing; it is logged once per session.  Connections are independent tasks,
so a client blocked in gsync or a large copy never holds up another.  What a connection may
cost before HELLO is bounded by :mod:`gdevd.ioctl.admission`.
"""

from __future__ import annotations

import array
import errno
import logging
import os
import socket
import struct
from typing import Any, cast

import trio

from gdevd.errors import GdevError
from gdevd.ioctl.admission import NEVER, PREAUTH_BYTES, PREAUTH_RECV, AcceptBackoff, Admission
from gdevd.ioctl.busypoll import BusyPoll
from gdevd.ioctl.dispatch import HANDLERS, INLINE, Call, Handler, InlineHandler
from gdevd.ioctl.session import SessionTable
from libgdev import abi
from libgdev.spin import AdaptiveSpin

log = logging.getLogger("gdevd.ioctl")
_RECV = 1 << 18
_PEERCRED = struct.Struct("3i")
BURST = 16  # frames served back to back before a checkpoint


class ServerConnection:
    """Framing over one accepted socket, driven without trio's socket wrapper.

    A request/reply exchange then costs one trip through the scheduler (the wait for the
    next request) instead of four checkpoints; a burst of pipelined frames still yields
    every :data:`BURST` frames so that one client cannot starve the loop.
    """

    def __init__(self, sock: socket.socket, poll: BusyPoll) -> None:
        self.sock = sock
        sock.setblocking(False)
        self.poll = poll
        self.spin = AdaptiveSpin()
        self.rx = abi.ReceiveBuffer()
        self._buf = bytearray(PREAUTH_RECV)  # grown to _RECV by authenticated()
        self._view = memoryview(self._buf)
        self._burst = 0
        self.preauth = True

    def authenticated(self) -> None:
        """HELLO succeeded: receive with the full-size buffer from now on."""
        self.preauth = False
        self._buf = bytearray(_RECV)
        self._view = memoryview(self._buf)

    def peer(self) -> tuple[int, int, int]:
        """(pid, uid, gid) of the connecting process (SO_PEERCRED)."""
        raw = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size)
        return _PEERCRED.unpack(raw)

    async def next_request(self) -> abi.Frame | abi.Request | None:
        """The next request, or None at EOF; a framing error raises (fatal).  A request that
        arrived alone and without a tail comes parsed (:func:`libgdev.abi.
        parse_simple_request`, the fast path); anything else as a whole frame to decode."""
        frame: abi.Frame | abi.Request | None
        while (frame := self.rx.next_frame()) is None:
            try:
                n = self.sock.recv_into(self._buf)
            except BlockingIOError:
                self._burst = 0
                if (n := self.poll.receive(self.sock, self._buf, self.spin)) < 0:
                    await trio.lowlevel.wait_readable(self.sock)
                    continue
            if n == 0:
                return None
            if not self.rx and (frame := abi.parse_simple_request(self._view[:n])):
                break
            self.rx.feed(self._view[:n])
            if self.preauth and len(self.rx) > PREAUTH_BYTES:
                raise abi.ProtocolError(errno.EMSGSIZE, f"{len(self.rx)} bytes before HELLO",
                                        fatal=True)
        self._burst += 1
        if self._burst >= BURST:
            self._burst = 0
            await trio.lowlevel.checkpoint()
        return frame

    async def send(self, data: bytes, fd: int = -1) -> None:
        """Send a whole reply, passing ``fd`` with SCM_RIGHTS if it is >= 0."""
        view = memoryview(data)
        if fd >= 0:
            fds = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))]
            while True:
                try:
                    view = view[self.sock.sendmsg([view], fds):]
                    break
                except BlockingIOError:
                    await trio.lowlevel.wait_writable(self.sock)
        while view:
            try:
                view = view[self.sock.send(view):]
            except BlockingIOError:
                await trio.lowlevel.wait_writable(self.sock)


class IoctlServer:
    """Listens on ``path`` (mode 0666: the token, not the socket's mode, is the gate)."""

    def __init__(self, sessions: SessionTable, path: str) -> None:
        self.sessions = sessions
        self.path = path
        self.poll = BusyPoll(sessions.system.config)
        self.admission = Admission(sessions.system.config)
        sessions.system.admission = self.admission.stats  # for /proc/gdev/limits

    async def serve(self, *,
                    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Bind, listen and serve connections until cancelled; removes the socket file."""
        listener = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            await listener.bind(self.path)
            os.chmod(self.path, 0o666)
            listener.listen(128)
            task_status.started()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self.admission.trimmer)
                await self._accept_loop(listener, nursery)
        finally:
            listener.close()
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass

    async def _accept_loop(self, listener: trio.socket.SocketType,
                           nursery: trio.Nursery) -> None:
        backoff = AcceptBackoff(self.admission.stats)
        while True:
            try:
                tsock, _ = await listener.accept()
            except OSError as exc:
                await backoff.failed(exc)
                continue
            backoff.succeeded()
            admitted = self._admit(socket.socket(fileno=tsock.detach()))
            if admitted is not None:
                nursery.start_soon(self._connection, *admitted)

    def _admit(self, sock: socket.socket) -> tuple[ServerConnection, tuple[int, int, int]] | None:
        """Wrap an accepted socket and admit its peer (closing it if refused)."""
        try:
            conn = ServerConnection(sock, self.poll)
            peer = conn.peer()
        except OSError:
            sock.close()
            return None
        if not self.admission.admit(peer[1]):
            sock.close()
            return None
        return conn, peer

    async def serve_socket(self, sock: socket.socket) -> None:
        """Serve one connected socket as an accepted one (admission included) until it
        closes; the tests' loopback hands over one end of a socketpair."""
        admitted = self._admit(sock)
        if admitted is not None:
            await self._connection(*admitted)

    async def _connection(self, conn: ServerConnection, peer: tuple[int, int, int]) -> None:
        sock, call = conn.sock, Call(self.sessions, peer)
        self.poll.add(sock)
        try:
            with trio.CancelScope(deadline=self.admission.deadline()) as scope:
                call.scope = scope
                await self._serve(conn, call)
            if conn.preauth and scope.cancelled_caught:
                self.admission.stats.timed_out += 1
                log.debug("connection of pid %d closed: no HELLO in time", peer[0])
        except (OSError, abi.ProtocolError) as exc:
            log.info("connection of pid %d closed: %s", call.peer[0], exc)
        finally:  # end the session first: a client that sees EOF finds its context gone
            try:
                if conn.preauth:
                    self.admission.release(peer[1])
                if call.session is not None:
                    await self.sessions.end(call.session, "connection closed")
            finally:
                self.poll.remove(sock)
                sock.close()
                self.admission.closed()

    async def _serve(self, conn: ServerConnection, call: Call) -> None:
        while (request := await conn.next_request()) is not None:
            reply, fd = await self._one(call, request)
            if conn.preauth and call.session is not None:  # HELLO succeeded
                conn.authenticated()
                self.admission.release(call.peer[1])
                assert call.scope is not None
                call.scope.deadline = NEVER
            try:
                await conn.send(reply, fd)
            finally:
                if fd >= 0:
                    os.close(fd)

    async def _one(self, call: Call, request: abi.Frame | abi.Request) -> tuple[bytes, int]:
        if isinstance(request, abi.Request):
            tail: abi.Tail
            (cmd, rid, fields), tail = request, b""
        else:
            rid = request.header.request_id
            try:
                cmd, fields, tail = abi.decode_request(request)
            except abi.ProtocolError as exc:
                self._log_bad(call, exc)
                return abi.encode_error(request.header.command, rid, exc.errno, exc.detail), -1
        try:
            if cmd.needs_session and cmd.name != "HELLO" and call.session is None:
                raise GdevError(errno.EACCES, f"{cmd.name} before HELLO")
            fn = HANDLERS[cmd.number]
            # (the casts' types are strings: a subscripted alias costs ~20 us per call)
            if cmd.number in INLINE:
                out = cast("InlineHandler[Any, Any]", fn)(call, fields, tail)
            else:
                out = await cast("Handler[Any, Any]", fn)(call, fields, tail)
        except abi.ProtocolError as exc:
            self._log_bad(call, exc)
            return abi.encode_error(cmd.number, rid, exc.errno, exc.detail), -1
        except GdevError as exc:  # the reason travels to the client (docs/abi.md)
            log.debug("%s: %s", cmd.name, exc)
            return abi.encode_error(cmd.number, rid, exc.errno, exc.detail), -1
        except Exception:  # a bug must cost one call, not the daemon
            log.exception("%s failed", cmd.name)
            return abi.encode_error(cmd.number, rid, errno.EIO,
                                    "internal error in gdevd (see its log)"), -1
        return abi.encode_reply(cmd, rid, out.reply, out.tail), out.fd

    def _log_bad(self, call: Call, exc: abi.ProtocolError) -> None:
        call.bad_messages += 1
        level = logging.WARNING if call.bad_messages == 1 else logging.DEBUG
        log.log(level, "malformed message from pid %d: %s", call.peer[0], exc)
