"""Regression: a time-buffered hand-off of one resource survives the other resource's traffic.

The pending hand-off's token used to be kept per physical GPU, so an arrival at the copy
engines of the same GPU cancelled the compute engine's buffered hand-off and its waiter was
never woken (seen as a hang in tests/memory/test_model.py).
"""

from __future__ import annotations

import trio

from gdevd import runtime as rt
from gdevd.runtime.sched import COMPUTE, MEMORY

from .sim import run


def test_a_buffered_compute_handoff_survives_a_copy_on_the_same_gpu() -> None:
    async def body(s: rt.GdevSystem) -> None:
        sched = s.scheduler
        a, b, m = [await rt.gopen(s, i) for i in range(3)]
        await sched.begin(a, COMPUTE)
        granted = trio.Event()

        async def waiter() -> None:
            await sched.begin(b, COMPUTE)
            granted.set()
            sched.end(b, COMPUTE)
        async with trio.open_nursery() as n:
            n.start_soon(waiter)
            await trio.sleep(0.001)
            vb = sched.vres(s.virtual[1], COMPUTE)     # b's vGPU over its share
            vb.credit, vb.replenished = -0.01, trio.current_time()
            vb.window.add(vb.created, trio.current_time())
            sched.end(a, COMPUTE)                      # hand-off to b is time-buffered
            assert sched.pres(0, COMPUTE).current is None and not granted.is_set()
            await sched.begin(m, MEMORY)               # copy-engine traffic meanwhile
            sched.end(m, MEMORY)
            with trio.fail_after(1.0):
                await granted.wait()
    run(body)
