"""Copy-engine completion "interrupts" delivered to the trio loop.

Each copy engine signals finished async jobs on an eventfd.  One task per engine (started
in the system nursery) sleeps in ``trio.lowlevel.wait_readable`` on it, resets it, reads the
engine's completed sequence number and wakes every waiter at or below it.  No polling:
a waiter sleeps until its job's interrupt arrives.
"""

from __future__ import annotations

import trio

from ..errors import GdevError
from ..gpu.copyengine import CopyEngine


class CopyCompletions:
    """Waiters on one copy engine's async jobs, woken by its eventfd."""

    def __init__(self, engine: CopyEngine) -> None:
        self.engine = engine
        self._waiters: dict[int, trio.Event] = {}

    async def run(self) -> None:
        """Deliver completions until cancelled (a task of the system nursery)."""
        fd = self.engine.fileno()
        while True:
            await trio.lowlevel.wait_readable(fd)
            self.engine.drain_events()
            self._wake()

    def _wake(self) -> None:
        done = self.engine.completed()
        for seq in [s for s in self._waiters if s <= done]:
            self._waiters.pop(seq).set()

    async def wait(self, seq: int) -> None:
        """Wait for job ``seq`` of the engine; raise its error if it failed.

        A job cannot be recalled once submitted, so the wait is shielded from cancellation:
        the buffers it uses must stay valid until it completed.
        """
        event = trio.Event()
        self._waiters[seq] = event
        self._wake()
        with trio.CancelScope(shield=True):
            await event.wait()
        err: GdevError | None = self.engine.error(seq)
        if err is not None:
            raise err
