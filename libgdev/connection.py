"""A client's ioctl connection: one Unix stream socket to gdevd, messages per libgdev.abi.

:class:`Connection` sends requests and reads replies in order.  ``call`` is one round trip;
``send``/``receive`` let a caller keep several requests in flight (the staging pipeline).
While it waits for a reply, ``call`` polls the socket for up to :data:`SPIN_S` before
sleeping, for each command as long as that pays (:mod:`libgdev.spin`); ``LIBGDEV_SPIN_US=0``
turns polling off.
Replies of commands that pass a file descriptor carry it as SCM_RIGHTS ancillary data; the
connection queues received descriptors and hands each to the reply that brought it.
"""

from __future__ import annotations

import array
import errno as _errno
import os
import socket
import threading
import time
from collections import deque
from typing import Generic, NamedTuple, cast

from libgdev import abi
from libgdev.errors import ProtocolViolation, error_from_errno
from libgdev.spin import AdaptiveSpin, spin_window
from libgdev.wire import Command, Rep, Req

_RECV_SIZE = 1 << 18
SPIN_US_DEFAULT = spin_window(100)  # covers a small call's reply when gdevd polls too
SPIN_S = float(os.environ.get("LIBGDEV_SPIN_US", SPIN_US_DEFAULT)) / 1e6  # docs/abi.md
_FD_SPACE = socket.CMSG_SPACE(4 * array.array("i").itemsize)
_Ancillary = tuple[int, int, bytes]  # recvmsg's (level, type, data)


class Reply(NamedTuple, Generic[Rep]):
    """A successful reply: its struct, tail bytes and the descriptor passed (or -1)."""

    fields: Rep
    tail: abi.Tail
    fd: int


class Connection:
    """One session's socket.  Not shared between threads without holding :attr:`lock`."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.lock = threading.RLock()
        self._rx = abi.ReceiveBuffer()
        self._fds: deque[int] = deque()
        self._buf = bytearray(_RECV_SIZE)
        self._view = memoryview(self._buf)
        self._next_id = 1
        self._closed = False
        self._spins: dict[int, AdaptiveSpin] = {}  # by command number

    @classmethod
    def connect(cls, path: str) -> Connection:
        """Connect to the daemon's ioctl socket at ``path``."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
        except OSError as exc:
            sock.close()
            raise error_from_errno(exc.errno or _errno.ECONNREFUSED, path) from None
        return cls(sock)

    def close(self) -> None:
        """Close the socket (the daemon then ends the session) and any queued fds."""
        if not self._closed:
            self._closed = True
            self.sock.close()
            while self._fds:
                _close_fd(self._fds.popleft())

    def send(self, cmd: Command[Req, Rep], req: Req, tail: abi.Tail = b"") -> int:
        """Send one request of ``cmd``; return its request id."""
        rid = self._next_id
        self._next_id += 1
        msg = abi.encode_request_head(cmd, rid, req, len(tail))
        try:
            _sendall(self.sock, msg, tail)
        except OSError as exc:
            raise error_from_errno(exc.errno or _errno.EPIPE, "daemon connection lost") from None
        return rid

    def receive(self, cmd: Command[Req, Rep], rid: int) -> Reply[Rep]:
        """Read the reply to request ``rid`` of ``cmd`` (replies come in order); raise its
        errno."""
        frame = self._read_frame()
        try:
            got, status, fields, tail = abi.decode_reply(frame)
        except abi.ProtocolError as exc:
            raise ProtocolViolation(_errno.EPROTO, str(exc)) from None
        if frame.header.request_id != rid:
            raise ProtocolViolation(_errno.EPROTO, f"reply {frame.header.request_id} for {rid}")
        if got is not cmd:
            raise ProtocolViolation(_errno.EPROTO, f"reply {rid} is not one to {cmd.name}")
        fd = -1
        if cmd.passes_fd and status == 0:
            if not self._fds:
                raise ProtocolViolation(_errno.EPROTO, f"{cmd.name} reply without an fd")
            fd = self._fds.popleft()
        if status:  # the daemon's reason, carried once into the exception
            reason = bytes(tail).decode("utf-8")
            raise error_from_errno(status, f"{cmd.name}: {reason}" if reason else cmd.name)
        return Reply(cast(Rep, fields), tail, fd)  # decode_reply used cmd's reply layout

    def call(self, cmd: Command[Req, Rep], req: Req, tail: abi.Tail = b"") -> Reply[Rep]:
        """One round trip: send the request, return its reply or raise its errno."""
        with self.lock:
            rid = self.send(cmd, req, tail)
            if cmd.passes_fd or len(self._rx):
                return self.receive(cmd, rid)
            spin = self._spins.get(cmd.number) or self._spins.setdefault(cmd.number,
                                                                          AdaptiveSpin())
            n = self._recv_some(spin)  # the common case: this reply, whole, in one read
            if (out := abi.parse_simple_reply(cmd, rid, self._view[:n])) is not None:
                return Reply(out, b"", -1)
            self._rx.feed(self._view[:n])
            return self.receive(cmd, rid)

    def _recv_spinning(self, spin: AdaptiveSpin | None) -> tuple[int, list[_Ancillary]]:
        got = None
        if spin is not None and SPIN_S > 0 and spin.should():
            got = _spin_recv(self.sock, self._buf, SPIN_S)
            spin.done(got is not None)
        if got is None:
            n, anc, _flags, _addr = self.sock.recvmsg_into([self._buf], _FD_SPACE)
            return n, anc
        return got

    def _read_frame(self) -> abi.Frame:
        while True:
            try:
                frame = self._rx.next_frame()
            except abi.ProtocolError as exc:
                raise ProtocolViolation(_errno.EPROTO, str(exc)) from None
            if frame is not None:
                return frame
            self._rx.feed(self._view[:self._recv_some()])

    def _recv_some(self, spin: AdaptiveSpin | None = None) -> int:
        """Receive into the connection's buffer (queueing passed fds); the byte count.
        With ``spin``, poll first if that pays."""
        try:
            n, anc = self._recv_spinning(spin)
        except OSError as exc:
            raise error_from_errno(exc.errno or _errno.EPIPE, "daemon connection lost") from None
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds = array.array("i")
                fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
                self._fds.extend(fds)
        if not n:
            raise ProtocolViolation(_errno.ECONNRESET, "the daemon closed the session")
        return n


def _spin_recv(sock: socket.socket, buf: bytearray,
               spin_s: float) -> tuple[int, list[_Ancillary]] | None:
    """Poll a nonblocking receive for up to ``spin_s`` seconds (a reply to a small call
    usually arrives within tens of microseconds, and sleeping and being woken costs more)."""
    deadline = time.perf_counter() + spin_s
    while True:
        try:
            n, anc, _f, _a = sock.recvmsg_into([buf], _FD_SPACE, socket.MSG_DONTWAIT)
            return n, anc
        except BlockingIOError:
            if time.perf_counter() > deadline:
                return None


def _sendall(sock: socket.socket, head: bytes, tail: bytes | memoryview) -> None:
    """Send ``head`` then ``tail`` without joining them (a tail may be 1 MiB)."""
    if not tail:
        sock.sendall(head)
        return
    sent = sock.sendmsg([head, tail])
    if sent < len(head):
        sock.sendall(memoryview(head)[sent:])
        sent = len(head)
    sock.sendall(memoryview(tail).cast("B")[sent - len(head):])


def _close_fd(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass
