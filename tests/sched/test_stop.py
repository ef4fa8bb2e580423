"""Launches always stop (issue #16, D3): a kernel of tiny waves on a huge legal grid still
yields at every quantum, so closing its context or the system ends it within one quantum."""

from __future__ import annotations

import struct

import pytest
import trio

from gdevd import runtime as rt
from gdevd.gpu.ptx import load_module

from ..runtime.conftest import SMALL, run_system
from .kernels import LOOP_PTX, LoopModule

HUGE = (2**31 - 1, 1, 1)        # the largest legal grid: ~2**41 threads, hours of waves


def huge_noop(m: LoopModule) -> rt.GdevKernel:
    """``loop`` with size 0: every thread returns after a bounds check, one tiny wave after
    another, for hours."""
    return rt.GdevKernel(m.code, len(LOOP_PTX), "loop", grid=HUGE, block=(1024, 1, 1),
                         params=struct.pack("<QII", m.out, 0, 1))


async def _until(pred, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    with trio.fail_after(timeout):
        while not pred():
            await trio.sleep(0.002)


def test_a_budget_ends_the_slice_between_two_finished_waves() -> None:
    """``run(budget)`` returns unfinished once its budget is spent, even when every wave
    it ran finished within the budget (the bug: it went on to the next wave, and the
    next, until the grid was done)."""
    mod = load_module(LOOP_PTX.decode())
    launch = mod.launch("loop", grid=(64 * 1024, 1, 1), block=(32, 1, 1),
                        params=struct.pack("<QII", 0, 0, 1), mmu=None, data_base=0)
    assert launch.run(1) is False
    assert launch.next_block < launch.total_blocks


@pytest.mark.timeout(120)
def test_closing_the_context_stops_a_grid_of_tiny_waves() -> None:
    async def body(s: rt.GdevSystem) -> None:
        engine = s.physical[0].compute
        h, other = await rt.gopen(s, 0), await rt.gopen(s, 1)
        m, mo = await LoopModule.load(h), await LoopModule.load(other)
        fence = await rt.glaunch(h, huge_noop(m))
        await _until(lambda: engine.current is not None and engine.current.run_s > 0.05)
        await rt.gclose(h)                       # returns once the engine dropped the job
        assert engine.current is None and fence not in h.pending
        await rt.gsync(other, await rt.glaunch(other, mo.idle(100)))  # the GPU is free
        got = bytearray(4)
        await rt.gmemcpy_from_device(other, got, mo.out, 4)
        assert struct.unpack("<I", got)[0] == 100
    run_system(body)


@pytest.mark.timeout(120)
def test_shutting_the_system_down_stops_a_running_launch() -> None:
    """The system's exit closes every context, cancelling a launch that would run for
    hours; nothing stays allocated."""
    async def main() -> rt.GdevSystem:
        async with rt.GdevSystem(rt.GdevConfig(**SMALL)) as s:
            h = await rt.gopen(s, 0)
            await rt.glaunch(h, huge_noop(await LoopModule.load(h)))
            engine = s.physical[0].compute
            await _until(lambda: engine.current is not None and engine.current.run_s > 0.05)
        return s
    s = trio.run(main)
    assert not s.handles and all(v.memory_used == 0 for v in s.virtual)
