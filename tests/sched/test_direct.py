"""Direct copies as memory-engine work: charged to the copy time, time-buffered over share."""

from __future__ import annotations

import trio

from gdevd import runtime as rt
from gdevd.runtime.sched import MEMORY

from ..runtime.conftest import run_system


def _make_over(sched, vres) -> None:  # type: ignore[no-untyped-def]
    """Out of credit and busy since creation: over any share below 100%."""
    now = trio.current_time()
    vres.replenished = now
    vres.credit = -vres.period / 2
    vres.window.add(vres.created, now)


def test_direct_copies_are_charged_to_the_memory_resource() -> None:
    async def body(s: rt.GdevSystem) -> None:
        sched = s.scheduler
        sched.trace = []
        h = await rt.gopen(s, 0)
        va = await rt.gmalloc(h, 4096)
        host = bytearray(4096)
        await rt.gmemcpy_to_device(h, va, host, 4096)
        await rt.gmemcpy_from_device(h, host, va, 4096)
        await rt.gmemcpy(h, va, va, 16)                       # small device copy
        se, vres = sched.entity(h), sched.vres(s.virtual[0], MEMORY)
        assert se.usage.copies == vres.usage.copies == 3
        assert se.usage.copy_s > 0 and se.usage.copy_s == vres.usage.copy_s
        assert [k for _, k, *_ in sched.trace] == [MEMORY] * 3
        assert se.usage.wait_s == 0 and vres.credit < 0   # charged to credit, never delayed
    run_system(body)


def test_only_an_over_share_vgpu_with_company_is_time_buffered() -> None:
    async def body(s: rt.GdevSystem) -> None:
        sched = s.scheduler
        h0, h1 = await rt.gopen(s, 0), await rt.gopen(s, 1)
        a0, a1 = await rt.gmalloc(h0, 4096), await rt.gmalloc(h1, 4096)
        v0, v1 = (sched.vres(v, MEMORY) for v in s.virtual[:2])
        host = bytearray(64)
        _make_over(sched, v0)
        await rt.gmemcpy_to_device(h0, a0, host, 64)           # alone: never delayed
        assert sched.entity(h0).usage.wait_s == 0
        await rt.gmemcpy_to_device(h1, a1, host, 64)           # vd1 becomes active
        _make_over(sched, v0)
        await rt.gmemcpy_to_device(h0, a0, host, 64)           # over, with company
        assert sched.entity(h0).usage.wait_s == sched.band_wait
        assert sched.entity(h1).usage.wait_s == 0              # within its share
        assert v0.usage.copies == 2 and v0.usage.copy_s > 0 and v1.usage.copies == 1
        s.scheduler.set_policy("null")                            # no arbitration: no delay
        _make_over(sched, v0)
        await rt.gmemcpy_to_device(h0, a0, host, 64)
        assert sched.entity(h0).usage.wait_s == sched.band_wait
    run_system(body)
