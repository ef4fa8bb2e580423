"""Admission to the ioctl socket: what an unauthenticated peer may cost the daemon.

Anyone may connect to the socket (its mode is 0666: the session token is the gate), so until a
connection has presented a valid token with HELLO it is *pre-authentication* and bounded:

* at most ``preauth_max`` such connections in all and ``preauth_per_uid`` per user (the
  peer's uid from ``SO_PEERCRED``); a connection over either limit is closed at once;
* each must HELLO within ``preauth_timeout_s`` or it is closed;
* its receive buffer starts at :data:`PREAUTH_RECV` bytes and grows to the full size only
  after HELLO, and a partial frame held before HELLO may not exceed :data:`PREAUTH_BYTES`.

``accept`` failing for want of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM) backs
off and retries instead of ending the daemon (:class:`AcceptBackoff`).  Memory freed by ended
connections goes back to the system (:func:`trim_heap`, run by :meth:`Admission.trimmer`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import errno
import logging
import math
from collections import Counter
from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from gdevd.runtime.config import GdevConfig

log = logging.getLogger("gdevd.ioctl")
PREAUTH_RECV = 4096          # receive buffer of a connection before HELLO
PREAUTH_BYTES = 2 * PREAUTH_RECV  # most bytes buffered before HELLO (a frame and a read)
BACKOFF_ERRNOS = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}
TRANSIENT_ERRNOS = {errno.ECONNABORTED, errno.EPROTO, errno.EINTR}
TRIM_EVERY_S = 1.0           # how often freed connection memory is returned to the system


@dataclasses.dataclass
class AdmissionStats:
    """Counters of the socket's admission (read by /proc/gdev/limits)."""

    preauth: int = 0            # connections now waiting for HELLO
    refused: int = 0            # connections closed at accept for being over a limit
    timed_out: int = 0          # connections closed for not sending HELLO in time
    accept_errors: int = 0      # accept() failures survived


class Admission:
    """The pre-authentication ledger of one ioctl server.

    Invariant: ``stats.preauth == sum(self._by_uid.values())`` and every admitted connection
    is released exactly once (by :meth:`authenticated` or :meth:`leave`, whichever first).
    """

    def __init__(self, config: GdevConfig) -> None:
        self.config = config
        self.stats = AdmissionStats()
        self._by_uid: Counter[int] = Counter()
        self._closed_since_trim = 0

    def admit(self, uid: int) -> bool:
        """Count a new connection of ``uid``; False (nothing counted) if over a limit."""
        c = self.config
        if self.stats.preauth >= c.preauth_max or self._by_uid[uid] >= c.preauth_per_uid:
            self.stats.refused += 1
            if self.stats.refused & (self.stats.refused - 1) == 0:  # 1, 2, 4, 8 ...: no flood
                log.warning("ioctl socket: refused connection of uid %d (%d waiting for "
                            "HELLO, %d refused so far)", uid, self.stats.preauth,
                            self.stats.refused)
            return False
        self._by_uid[uid] += 1
        self.stats.preauth += 1
        return True

    def release(self, uid: int) -> None:
        """The connection of ``uid`` is no longer pre-authentication (HELLO or its end)."""
        self._by_uid[uid] -= 1
        if not self._by_uid[uid]:
            del self._by_uid[uid]
        self.stats.preauth -= 1

    def deadline(self) -> float:
        """The trio time by which a connection accepted now must have sent HELLO."""
        return trio.current_time() + self.config.preauth_timeout_s

    def closed(self) -> None:
        """A connection ended (its memory may go back to the system at the next trim)."""
        self._closed_since_trim += 1

    async def trimmer(self) -> None:
        """Return freed heap to the system every TRIM_EVERY_S after connections ended."""
        while True:
            await trio.sleep(TRIM_EVERY_S)
            if self._closed_since_trim:
                self._closed_since_trim = 0
                await trio.to_thread.run_sync(trim_heap)  # it walks the heap: not on the loop


class AcceptBackoff:
    """How long to wait after a failed ``accept`` (doubling from 10 ms to 1 s)."""

    def __init__(self, stats: AdmissionStats) -> None:
        self.stats = stats
        self.delay = 0.0

    async def failed(self, exc: OSError) -> None:
        """Wait after ``exc``, or re-raise it if it is not one accept can recover from."""
        if exc.errno not in BACKOFF_ERRNOS | TRANSIENT_ERRNOS:
            raise exc
        self.stats.accept_errors += 1
        if exc.errno in TRANSIENT_ERRNOS:
            return
        self.delay = min(1.0, max(0.01, self.delay * 2))
        log.warning("ioctl socket: accept failed (%s); retrying in %.2f s", exc, self.delay)
        await trio.sleep(self.delay)

    def succeeded(self) -> None:
        """An accept worked: the next failure starts from the shortest wait again."""
        self.delay = 0.0


_libc: ctypes.CDLL | bool | None = None  # False: no libc found


def trim_heap() -> None:
    """Give free heap memory back to the system (glibc ``malloc_trim``; no-op elsewhere)."""
    global _libc
    if _libc is None:
        name = ctypes.util.find_library("c")
        _libc = ctypes.CDLL(name) if name else False
    if isinstance(_libc, ctypes.CDLL) and hasattr(_libc, "malloc_trim"):
        _libc.malloc_trim(0)


NEVER = math.inf
