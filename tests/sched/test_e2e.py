"""End to end: real PTX launches on the compute engine, ordered by the scheduler."""

from __future__ import annotations

import trio

from gdevd import runtime as rt
from gdevd.runtime.sched import COMPUTE

from ..runtime.conftest import run_system
from .kernels import LoopModule


async def _until(pred, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    with trio.fail_after(timeout):
        while not pred():
            await trio.sleep(0.002)


def test_higher_priority_contexts_are_dispatched_first() -> None:
    """A holder's launch is paused on the engine while three contexts queue; the
    scheduler then dispatches them by priority, not by arrival (non-preemptive, as in the
    paper: test_preempt.py has the preemptive order)."""
    async def body(s: rt.GdevSystem) -> None:
        sched, engine = s.scheduler, s.physical[0].compute
        sched.preempter.slice_s = 0
        holder = await rt.gopen(s, 0)
        low, mid, high = [await rt.gopen(s, 0) for _ in range(3)]
        for h, p in ((low, 5), (mid, 20), (high, 35)):
            sched.entity(h).prio.override = p
        mods = {h: await LoopModule.load(h) for h in (holder, low, mid, high)}
        engine.hold.clear()                     # the engine pauses at the next slice
        try:
            fid = await rt.glaunch(holder, mods[holder].idle(50))
            await _until(lambda: sched.pres(0, COMPUTE).current is not None)
            fences = {}
            queue = sched.vres(s.virtual[0], COMPUTE).queue
            for i, h in enumerate((low, mid, high)):   # arrival order: low, mid, high
                fences[h] = await rt.glaunch(h, mods[h].idle(10))
                await _until(lambda n=i + 1: len(queue) == n)
        finally:
            engine.hold.set()
        await rt.gsync(holder, fid)
        for h, f in fences.items():
            await rt.gsync(h, f)
        order = [cid for _, cid, kind in sched.grants if kind == COMPUTE]
        assert order[-4:] == [holder.cid, high.cid, mid.cid, low.cid]
        for h in (holder, low, mid, high):
            u = sched.entity(h).usage
            assert u.launches == 1 and u.compute_s > 0
        assert sched.entity(low).usage.wait_s > sched.entity(high).usage.wait_s
    run_system(body)


def test_contexts_of_two_vgpus_take_turns_with_real_launches() -> None:
    async def body(s: rt.GdevSystem) -> None:
        sched = s.scheduler
        a, b = await rt.gopen(s, 0), await rt.gopen(s, 1)
        ma, mb = await LoopModule.load(a), await LoopModule.load(b)

        async def run(h: rt.Handle, m: LoopModule) -> None:
            for _ in range(6):
                await rt.gsync(h, await rt.glaunch(h, m.idle(200)))
        async with trio.open_nursery() as n:
            n.start_soon(run, a, ma)
            n.start_soon(run, b, mb)
        va, vb = (sched.vres(v, COMPUTE).usage for v in s.virtual[:2])
        assert va.launches == vb.launches == 6
        assert va.compute_s > 0 and vb.compute_s > 0
        assert sched.pres(0, COMPUTE).current is None
    run_system(body)
