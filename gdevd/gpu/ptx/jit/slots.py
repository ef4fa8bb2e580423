"""Compiler slots shared by every build of the process, granted fairly between owners.

An owner is whoever a build compiles for: the daemon passes the uid of the tenant whose load
started the compile (``None`` for in-process use). Without fairness, slots go to whichever
build thread polls first, so a tenant that loads many large modules would hold every core's
compiler for as long as its backlog lasts, while another tenant's kernels stay on the
interpreter. Here a free slot goes to the waiter whose owner holds the fewest slots; among
those, to the owner served longest ago (never served first), then to the waiter that
arrived first. Owners thus take turns: a tenant's many builds are served one after another's
single build, not all before it.

Waiters poll (:meth:`FairSlots.try_acquire` in a loop, as :class:`~.jobs.Jobs` does), so a
waiter that stops polling without :meth:`FairSlots.leave` (a thread that died) is dropped
after ``STALE`` seconds rather than blocking the others.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from collections.abc import Hashable

STALE = 0.5     # seconds without a poll after which a waiter no longer counts


class FairSlots:
    """``n`` slots; :meth:`try_acquire` grants one to the fairest waiter (see above)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self._lock = threading.Lock()
        self._held: Counter[Hashable] = Counter()
        self._served: dict[Hashable, int] = {}      # owner -> number of its latest grant
        self._order = itertools.count()
        # ticket -> (owner, arrival order, last poll time)
        self._waiting: dict[object, tuple[Hashable, int, float]] = {}

    def try_acquire(self, owner: Hashable, ticket: object) -> bool:
        """Take a slot for ``owner`` if one is free and ``ticket`` (one waiter: the same
        object on every poll) is the fairest waiter; otherwise register or refresh the
        ticket and return False.  A True return removes the ticket from the waiters."""
        now = time.monotonic()
        with self._lock:
            arrived = self._waiting[ticket][1] if ticket in self._waiting else next(self._order)
            self._waiting[ticket] = (owner, arrived, now)
            if sum(self._held.values()) >= self.n or self._next(now) is not ticket:
                return False
            del self._waiting[ticket]
            self._held[owner] += 1
            self._served[owner] = next(self._order)
            return True

    def _next(self, now: float) -> object:
        """The fairest live waiter's ticket (stale ones are dropped)."""
        for t in [t for t, (_, _, seen) in self._waiting.items() if now - seen > STALE]:
            del self._waiting[t]

        def rank(t: object) -> tuple[int, int, int]:
            owner, arrived, _ = self._waiting[t]
            return self._held[owner], self._served.get(owner, -1), arrived
        return min(self._waiting, key=rank)

    def leave(self, ticket: object) -> None:
        """``ticket`` stops waiting (it gave up, or its build was cancelled)."""
        with self._lock:
            self._waiting.pop(ticket, None)

    def release(self, owner: Hashable) -> None:
        """Give back a slot ``owner`` took."""
        with self._lock:
            if self._held[owner] <= 0:
                raise ValueError("release of a slot this owner does not hold")
            self._held[owner] -= 1
            if not self._held[owner]:
                del self._held[owner]

    def held(self, owner: Hashable) -> int:
        """How many slots ``owner`` holds now."""
        with self._lock:
            return self._held[owner]
