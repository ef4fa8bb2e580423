"""Spin, then block: when to busy-poll for the next message instead of sleeping on it.

Theory of operation
-------------------
A request/reply on a Unix socket costs two wake-ups of a sleeping process.  On a virtual
machine, waking an idle vCPU is the largest cost of a small call (measured here: ~150 us of a
~250 us gquery; docs/abi.md).  A side that expects the next message within a few tens of
microseconds polls for it for a bounded window first, like CUDA's ``CU_CTX_SCHED_AUTO``
spinning while it waits for the GPU, Linux's socket busy-poll and glibc's adaptive mutexes.

Spinning burns the CPU it runs on, so it must pay: :class:`AdaptiveSpin` tells whether to
try.  After a poll that found its message in time it keeps polling; after one that timed out
it skips the next 1, 2, 4 ... :data:`MAX_SKIP` waits (exponential backoff) before trying
again.  A peer that answers slowly (a gsync, a large copy, a crowded machine) or a caller
that calls rarely thus costs about one wasted window per :data:`MAX_SKIP` waits.  The same
backoff bounds a subtler loss: a reply wakes its reader onto the replier's CPU (a sync
wake-up), so two sides that share a CPU take turns, and there a poll only delays the peer
until the window ends.  On a machine with one CPU the default windows are 0
(:func:`spin_window`).
"""

from __future__ import annotations

import os

MAX_SKIP = 64


def spin_window(us: int) -> int:
    """``us`` where this process may run on two CPUs or more, else 0: with one CPU the
    side that polls only keeps the other from running, and a poll can never pay."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return us if cpus > 1 else 0


class AdaptiveSpin:
    """The spin-or-block decision of one waiter (one connection, or one command of one).

    ``should()`` says whether to poll before blocking; ``done(found)`` reports whether the
    poll found its message within the window.
    """

    __slots__ = ("_skip", "_backoff")

    def __init__(self) -> None:
        self._skip = 0
        self._backoff = 1

    def should(self) -> bool:
        """Whether the next wait should poll first (False while backing off)."""
        if self._skip:
            self._skip -= 1
            return False
        return True

    def done(self, found: bool) -> None:
        """Record a poll's outcome: keep polling after a hit, back off after a miss."""
        if found:
            self._backoff = 1
        else:
            self._skip = self._backoff
            self._backoff = min(2 * self._backoff, MAX_SKIP)
