"""Preemption at slice boundaries, and launch time limits (gdevd/runtime/sched/preempt.py).

Kernel sizes are iteration counts (``loop`` of kernels/loop.cu); orderings are read from the
scheduler's grant log and busy trace, never from wall-clock assertions."""

from __future__ import annotations

import errno
import os
import struct

import numpy as np
import pytest
import trio

from gdevd import runtime as rt
from gdevd.errors import KernelFault
from gdevd.runtime.sched import COMPUTE

from ..runtime.conftest import run_system
from .kernels import LOOP_PTX, LoopModule

FOREVER = 2**32 - 1          # iterations of `idle` that no test waits for


def loop_kernel(m: LoopModule, data: int, size: int, n: int) -> rt.GdevKernel:
    """``loop`` over ``size`` threads, ``n`` iterations each (a GLoop-style eater)."""
    return rt.GdevKernel(m.code, len(LOOP_PTX), "loop", grid=((size + 255) // 256, 1, 1),
                         block=(256, 1, 1), params=struct.pack("<QII", data, size, n))


def loop_model(size: int, n: int) -> np.ndarray:
    """What ``loop`` leaves in data[0..size)."""
    i = np.arange(size, dtype=np.uint64)
    acc = np.zeros(size, np.uint64)
    for k in range(n):
        acc = (acc + i * k + (k ^ i)) & 0xFFFFFFFF
    return acc.astype(np.uint32)


async def _until(pred, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    with trio.fail_after(timeout):
        while not pred():
            await trio.sleep(0.002)


def tenant(s: rt.GdevSystem) -> rt.Credentials:
    """Credentials of a tenant: any process but the daemon (here, our parent)."""
    return rt.Credentials(os.getuid(), os.getgid(), os.getppid())


async def _eat(h: rt.Handle, size: int, n: int) -> np.ndarray:
    m = await LoopModule.load(h)
    data = await rt.gmalloc(h, 4 * size)
    await rt.gsync(h, await rt.glaunch(h, loop_kernel(m, data, size, n)))
    out = bytearray(4 * size)
    await rt.gmemcpy_from_device(h, out, data, 4 * size)
    return np.frombuffer(bytes(out), np.uint32)


def _eaters(slice_us: int, same_vgpu: bool) -> tuple[list, list[np.ndarray]]:
    """Two eaters side by side; (the compute trace, their results)."""
    size, n = 512, 10000
    results: list[np.ndarray] = []

    async def body(s: rt.GdevSystem) -> list:
        s.scheduler.preempter.slice_s = slice_us / 1e6
        s.scheduler.trace = []
        hs = [await rt.gopen(s, 0), await rt.gopen(s, 0 if same_vgpu else 1)]

        async def one(h: rt.Handle) -> None:
            results.append(await _eat(h, size, n))
        async with trio.open_nursery() as nursery:
            for h in hs:
                nursery.start_soon(one, h)
        return [(cid, t0, t1) for _, kind, cid, t0, t1 in s.scheduler.trace if kind == COMPUTE]
    trace = run_system(body)
    model = loop_model(size, n)
    assert all(np.array_equal(r, model) for r in results)     # bit-identical to the model
    return trace, results


def _switches(trace: list) -> int:
    cids = [cid for cid, _, _ in sorted(trace, key=lambda t: t[1])]
    return sum(a != b for a, b in zip(cids, cids[1:], strict=False))


@pytest.mark.parametrize("same_vgpu", [True, False])
def test_two_eaters_interleave_with_identical_results(same_vgpu: bool) -> None:
    trace, _ = _eaters(2000, same_vgpu)
    assert _switches(trace) >= 3          # A B A B ...: the engine changed hands repeatedly


def test_without_preemption_eaters_run_one_after_the_other() -> None:
    trace, _ = _eaters(0, True)
    assert _switches(trace) == 1          # A then B, as in the paper


def test_a_more_urgent_context_preempts_at_once_and_the_launch_resumes() -> None:
    async def body(s: rt.GdevSystem) -> None:
        sched, engine = s.scheduler, s.physical[0].compute
        sched.preempter.slice_s = 3600.0          # slices never expire here: priority only
        holder, high = await rt.gopen(s, 0), await rt.gopen(s, 0)
        sched.entity(high).prio.override = 35
        mh, mhi = await LoopModule.load(holder), await LoopModule.load(high)
        data = await rt.gmalloc(holder, 4 * 256)
        engine.hold.clear()                       # the engine pauses at the next quantum
        try:
            fid = await rt.glaunch(holder, loop_kernel(mh, data, 256, 2000))
            await _until(lambda: sched.pres(0, COMPUTE).job is not None)
            fh = await rt.glaunch(high, mhi.idle(10))
            await _until(lambda: sched.pres(0, COMPUTE).job.preempt)
        finally:
            engine.hold.set()
        await rt.gsync(high, fh)
        assert fid in holder.pending               # high finished while holder waited
        await rt.gsync(holder, fid)
        order = [cid for _, cid, kind in sched.grants if kind == COMPUTE]
        assert order[-3:] == [holder.cid, high.cid, holder.cid]
        u = sched.vres(s.virtual[0], COMPUTE).usage
        assert u.launches == 2 and u.preemptions == 1
        out = bytearray(4 * 256)
        await rt.gmemcpy_from_device(holder, out, data, len(out))
        assert np.array_equal(np.frombuffer(bytes(out), np.uint32), loop_model(256, 2000))
    run_system(body)


def test_the_vgpu_watchdog_kills_only_the_overrunning_context() -> None:
    async def body(s: rt.GdevSystem) -> None:
        s.virtual[0].watchdog_ms = 200
        h, other = await rt.gopen(s, 0), await rt.gopen(s, 1)
        m = await LoopModule.load(h)
        fid = await rt.glaunch(h, m.idle(FOREVER))
        got = await _eat(other, 256, 50)          # meanwhile another vGPU works, preempting
        assert np.array_equal(got, loop_model(256, 50))
        with pytest.raises(KernelFault) as info:
            await rt.gsync(h, fid)
        assert info.value.errno == errno.ETIME
        assert s.scheduler.vres(s.virtual[0], COMPUTE).usage.timeouts == 1
        assert s.scheduler.vres(s.virtual[1], COMPUTE).usage.timeouts == 0
        with pytest.raises(KernelFault):          # the fault is sticky for its context only
            await rt.glaunch(h, m.idle(1))
    run_system(body)


def test_tenants_have_a_default_time_limit_and_daemon_contexts_preempt_them() -> None:
    """With preemption off (the paper's mode), a tenant's endless kernel still cannot starve
    an in-daemon module's context, and it dies at the system-wide limit; the daemon's own
    contexts are not limited."""
    async def body(s: rt.GdevSystem) -> None:
        pre, engine = s.scheduler.preempter, s.physical[0].compute
        pre.slice_s = 0
        assert pre.kernel_time_max > 0                          # on by default
        pre.kernel_time_max = 0.5
        t = await rt.gopen(s, 0, cred=tenant(s))
        mod = await rt.gopen(s, 0)                              # a daemon context
        mt, mm = await LoopModule.load(t), await LoopModule.load(mod)
        ft = await rt.glaunch(t, mt.idle(FOREVER))
        await _until(lambda: engine.current is not None)
        for _ in range(3):                                      # the module is served
            await rt.gsync(mod, await rt.glaunch(mod, mm.idle(5)))
        assert ft in t.pending
        with pytest.raises(KernelFault) as info:
            await rt.gsync(t, ft)
        assert info.value.errno == errno.ETIME
        fm = await rt.glaunch(mod, mm.idle(FOREVER))           # no limit for the daemon
        await _until(lambda: engine.current is not None and engine.current.run_s > 0.7)
        assert fm in mod.pending and mod.fault is None
        await rt.gclose(mod)
    run_system(body)


def test_band_hands_an_expired_slice_only_to_a_vgpu_within_its_share() -> None:
    async def body(s: rt.GdevSystem) -> None:
        sched = s.scheduler
        sched.set_policy("band")
        a, b = (sched.vres(v, COMPUTE) for v in s.virtual[:2])
        now = trio.current_time()
        await trio.sleep(0.01)
        now = trio.current_time()
        b.credit, b.last_active = -0.001, now
        b.window.add(b.created, now)                       # b used 100% since it exists
        a.last_active = now
        assert sched.policy.over(sched, b, now)
        assert not sched.policy.yields(sched, a, b, now)   # b is over: a keeps the engine
        b.credit = 0.001
        assert sched.policy.yields(sched, a, b, now)       # b has credit again: its turn
        sched.set_policy("fifo")
        b.credit = -0.001
        assert sched.policy.yields(sched, a, b, now)       # FIFO: a round robin of slices
    run_system(body)


@pytest.mark.parametrize("waiter_prio,yields", [(5, False), (20, True)])
def test_an_expired_slice_goes_only_to_a_waiter_at_least_as_urgent(waiter_prio: int,
                                                                   yields: bool) -> None:
    """Same vGPU: a less urgent waiter never takes the engine from a running launch (no
    priority inversion at slice expiry); an equal one gets its turn."""
    async def body(s: rt.GdevSystem) -> None:
        sched, engine = s.scheduler, s.physical[0].compute
        sched.preempter.slice_s = 0.002
        holder, other = await rt.gopen(s, 0), await rt.gopen(s, 0)
        sched.entity(holder).prio.override = 20
        sched.entity(other).prio.override = waiter_prio
        mh, mo = await LoopModule.load(holder), await LoopModule.load(other)
        pres = sched.pres(0, COMPUTE)
        engine.hold.clear()                      # the holder's launch stays on the engine
        try:
            fh = await rt.glaunch(holder, mh.idle(FOREVER))
            await _until(lambda: pres.job is not None)
            await rt.glaunch(other, mo.idle(1))
            await _until(lambda: len(sched.vres(s.virtual[0], COMPUTE).queue) == 1)
            await trio.sleep(0.02)               # ten slices
            assert pres.job.preempt is yields
        finally:
            engine.hold.set()
        await rt.gclose(holder)
        assert fh not in holder.pending
        await rt.gbarrier(other)
    run_system(body)
