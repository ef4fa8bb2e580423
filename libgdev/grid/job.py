"""One run of guest work on the client: units [0, total) handed out as ranges, each kept once.

A job is ``total`` units of work and ``make(start, count)``, which builds the Dask task (its
function and arguments) computing units [start, start + count). A *splittable* job (rows of a
matrix product) is cut as it is handed out, to the size the chosen node should get
(sizing.py); a job of fixed pieces hands out one unit (one given piece) at a time.

Invariant: the ranges queued in ``todo``, those in flight and those with a result partition
[0, total): every unit is in exactly one, so a result is neither lost (a range leaves flight
only into ``results`` or back into ``todo``) nor kept twice (a second result for a range that
has one is dropped and counted by the client).
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# A piece of work as Dask runs it: the function and its arguments.
Task = tuple[Callable[..., Any], tuple[Any, ...]]


@dataclass
class Job:
    """The bookkeeping of one run; see the module docstring for its invariant."""

    total: int
    make: Callable[[int, int], Task]
    splittable: bool = False
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    todo: deque[tuple[int, int]] = field(init=False)
    results: dict[int, tuple[int, Any]] = field(default_factory=dict)
    inflight: dict[Any, tuple[int, int, str]] = field(default_factory=dict)
    attempts: dict[int, int] = field(default_factory=dict)
    failures: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.total < 0:
            raise ValueError(f"a job has a non-negative number of units, not {self.total}")
        if self.splittable:
            self.todo = deque([(0, self.total)] if self.total else [])
        else:
            self.todo = deque((i, 1) for i in range(self.total))

    @property
    def done(self) -> bool:
        """Whether every unit has its result."""
        return sum(count for count, _ in self.results.values()) == self.total

    def take(self, units: int) -> tuple[int, int, Task]:
        """The next range, cut to at most ``units`` when splittable, and its task; counts an
        attempt. The caller puts it in ``inflight`` (or back with :meth:`give_back`)."""
        start, count = self.todo.popleft()
        if self.splittable and count > units >= 1:
            self.todo.appendleft((start + units, count - units))
            count = units
        self.attempts[start] = self.attempts.get(start, 0) + 1
        return start, count, self.make(start, count)

    def give_back(self, start: int, count: int) -> None:
        """Queue a range again (first in line) after it ran nowhere."""
        self.todo.appendleft((start, count))

    def fail(self, start: int) -> int:
        """Count a failed attempt of the range at ``start``; the failures so far."""
        self.failures[start] = self.failures.get(start, 0) + 1
        return self.failures[start]

    def keep(self, start: int, count: int, value: Any) -> bool:
        """Keep a range's result; False (and nothing changes) if it has one already."""
        if start in self.results:
            return False
        self.results[start] = (count, value)
        return True

    def ordered(self) -> list[tuple[int, int, Any]]:
        """(start, count, value) of every result, in unit order."""
        return [(s, c, v) for s, (c, v) in sorted(self.results.items())]

    def check(self) -> None:
        """Assert the invariant (tests call it after a run)."""
        ranges = sorted([*self.todo, *((s, c) for s, c, _ in self.inflight.values()),
                         *((s, c) for s, (c, _) in self.results.items())])
        at = 0
        for start, count in ranges:
            assert start == at and count >= 1, f"job {self.id}: ranges {ranges}"
            at += count
        assert at == self.total, f"job {self.id}: ranges cover {at} of {self.total}"
