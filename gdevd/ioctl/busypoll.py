"""Busy-polling of ioctl connections: the daemon's half of spin-then-block.

Theory of operation
-------------------
A connection that has just replied usually receives its client's next request within tens
of microseconds when the client calls back to back; parking in trio's epoll wait and being
woken costs more than that on a virtual machine (docs/abi.md).  So, before it parks, a
connection polls its socket for up to ``config.ioctl_poll_us`` (a /proc/gdev tunable, 0
turns it off), under three guards that bound what the rest of the daemon can lose:

- it polls only when no other trio task is runnable;
- it stops as soon as any other ioctl connection has data (one ``poll(2)`` over all of
  them each round), leaving that one to trio;
- it polls only while polling pays for this connection (:class:`libgdev.spin.AdaptiveSpin`:
  a miss backs off exponentially), so a client that calls rarely costs nearly nothing.

What remains is that FUSE requests, timers and engine completions may wait up to one window
while the loop polls.  The loop holds no state across the poll: it is not a checkpoint.
"""

from __future__ import annotations

import select
import socket
import time

import trio

from libgdev.spin import AdaptiveSpin


class BusyPoll:
    """The poll set of every live ioctl connection and the window (read live from
    ``config.ioctl_poll_us``).  ``hits`` and ``misses`` count polls that found their
    request in time and polls that timed out."""

    def __init__(self, config: object) -> None:
        self.config = config
        self._set = select.poll()
        self.hits = 0
        self.misses = 0

    def add(self, sock: socket.socket) -> None:
        """Watch a new connection's socket."""
        self._set.register(sock, select.POLLIN)

    def remove(self, sock: socket.socket) -> None:
        """Stop watching a connection's socket (before it is closed)."""
        self._set.unregister(sock)

    def receive(self, sock: socket.socket, buf: bytearray, spin: AdaptiveSpin) -> int:
        """Poll ``sock`` for up to the window and receive into ``buf``: the byte count (0 at
        EOF), or -1 when nothing came (the caller then awaits readability).  Errors of the
        receive propagate as from ``recv_into``."""
        window = self.config.ioctl_poll_us  # type: ignore[attr-defined]
        if window <= 0 or trio.lowlevel.current_statistics().tasks_runnable or \
                not spin.should():
            return -1
        fd, deadline = sock.fileno(), time.perf_counter() + window / 1e6
        while True:
            ready = self._set.poll(0)
            if any(f == fd for f, _ in ready):
                spin.done(True)
                self.hits += 1
                try:
                    return sock.recv_into(buf)
                except BlockingIOError:  # POLLHUP/POLLERR without data: let trio see it
                    return -1
            if ready:  # another connection has work: the loop serves it, not a poll
                return -1
            if time.perf_counter() > deadline:
                spin.done(False)
                self.misses += 1
                return -1
