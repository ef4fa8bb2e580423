"""A simulated workload for the scheduler's logic under trio's MockClock (autojump).

Clients drive ``Scheduler.begin``/``end`` directly, holding the resource for a simulated
kernel time with ``trio.sleep``: no engine, no thread, fully deterministic.  ``REARRIVE``
is the gap between a completion and the same client's next arrival (the time a real client
needs to issue its next operation).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio
import trio.testing

from gdevd import runtime as rt
from gdevd.runtime.sched import COMPUTE

REARRIVE = 20e-6

SMALL = dict(memory=16 << 20, dma_memory=4 << 20, vgpus=4)


def run(body: Callable[[rt.GdevSystem], Awaitable[Any]], **config: Any) -> Any:
    """Run ``body(system)`` on a fresh system under an autojumping MockClock."""
    async def main() -> Any:
        async with rt.GdevSystem(rt.GdevConfig(**{**SMALL, **config})) as system:
            return await body(system)
    return trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


async def client(sched: Any, h: rt.Handle, length: float, until: float,
                 kind: str = COMPUTE, gap: float = REARRIVE) -> None:
    """Back-to-back operations of ``length`` seconds until the clock reaches ``until``."""
    while trio.current_time() < until:
        await sched.begin(h, kind)
        await trio.sleep(length)
        sched.end(h, kind)
        await trio.sleep(gap)


def shares(sched: Any, handles: list[rt.Handle], kind: str = COMPUTE) -> list[float]:
    """Each context's busy time as a percent of the total busy time."""
    busy = [sched.entity(h).usage.compute_s if kind == COMPUTE else
            sched.entity(h).usage.copy_s for h in handles]
    total = sum(busy)
    return [100 * b / total for b in busy]


async def set_shares(system: rt.GdevSystem, percents: list[int]) -> None:
    """Set compute and memory bandwidth of vd0.. to ``percents`` (the rest 0)."""
    for v, p in zip(system.virtual, percents + [0] * len(system.virtual), strict=False):
        v.compute_bandwidth = v.memory_bandwidth = p
