"""Swapping: eviction on a full share or device, swap-in on touch, no byte lost."""

from __future__ import annotations

import errno

import numpy as np
import pytest
import trio

from gdevd import runtime as rt
from gdevd.errors import GdevError
from gdevd.runtime.mm.residency import PIN_BURST

from .conftest import MiB, pattern, read_back, run_swappy, settle_all
from .kernels import as_u32, load_madd, madd


def test_full_share_swaps_out_the_old_object_and_data_survive() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        a = await rt.gmalloc(h, 6 * MiB)
        da = pattern(1, 6 * MiB)
        await rt.gmemcpy_to_device(h, a, da, da.size)
        b = await rt.gmalloc(h, 6 * MiB)                   # share is 8 MiB: a goes out
        assert h.lookup(a).block.resident_bytes == 0
        assert s.virtual[0].memory_used == 6 * MiB
        assert s.virtual[0].swap.swap_out_bytes == 6 * MiB == h.counters.swap.swapped_bytes
        db = pattern(2, 6 * MiB)
        await rt.gmemcpy_to_device(h, b, db, db.size)       # b is resident: no swap
        await settle_all(s)
        s.check_invariants()
        assert np.array_equal(await read_back(h, a, da.size), da)   # served from swap
        assert h.counters.copies["swap"] == 1 and h.lookup(a).block.resident_bytes == 0
        await rt.gmemcpy_to_device(h, a + MiB, da[MiB:2 * MiB], MiB)  # one MiB comes back
        assert h.lookup(a).block.resident_bytes == MiB
        assert h.lookup(b).block.resident_bytes == 6 * MiB       # 7 MiB fit the share
        assert np.array_equal(await read_back(h, a, da.size), da)
        assert np.array_equal(await read_back(h, b, db.size), db)
        await settle_all(s)
        s.check_invariants()
    run_swappy(body)


def test_enomem_only_for_the_asker_when_swap_is_full() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        other = await rt.gopen(s, 1)
        keep = await rt.gmalloc(other, 4 * MiB)
        a = await rt.gmalloc(h, 8 * MiB)
        with pytest.raises(GdevError) as info:               # needs 8 MiB of swap: 4 exist
            await rt.gmalloc(h, 8 * MiB)
        assert info.value.errno == errno.ENOMEM
        assert h.lookup(a).block.resident_bytes == 8 * MiB   # nothing half done
        d = pattern(3, 4 * MiB)
        await rt.gmemcpy_to_device(other, keep, d, d.size)
        assert np.array_equal(await read_back(other, keep, d.size), d)
    run_swappy(body, host_swap=4 * MiB)


def test_launch_brings_back_every_object_of_the_context() -> None:
    async def body(s: rt.GdevSystem) -> None:
        a = await rt.gopen(s, 0)
        b = await rt.gopen(s, 0)                            # same vGPU: same 8 MiB share
        n = 256                                             # 256 KiB matrices
        code = await load_madd(a)
        da, db = pattern(1, 4 * n * n), pattern(2, 4 * n * n)
        ma, mb, mc = [await rt.gmalloc(a, 4 * n * n) for _ in range(3)]
        await rt.gmemcpy_to_device(a, ma, da, da.size)
        await rt.gmemcpy_to_device(a, mb, db, db.size)
        hog = await rt.gmalloc(b, 8 * MiB - 4 * n * n)      # evicts a's objects
        assert sum(o.block.resident_bytes for o in a.space.objects) < 4 * 3 * n * n
        await madd(a, code, ma, mb, mc, n)                  # all of a comes back first
        assert all(o.block.resident_bytes == o.size for o in a.space.objects)
        assert b.lookup(hog).block.resident_bytes < 8 * MiB - 4 * n * n
        out = as_u32(await read_back(a, mc, 4 * n * n))
        assert np.array_equal(out, as_u32(da) + as_u32(db))
        assert s.virtual[0].swap.swap_in_count >= 1 and a.counters.swap.swap_in_bytes > 0
    run_swappy(body)


def test_a_lower_priority_context_cannot_push_out_a_higher_one() -> None:
    async def body(s: rt.GdevSystem) -> None:
        prio: dict[int, int] = {}
        s.priority_of = lambda h: prio.get(h.cid, 20)
        hi = await rt.gopen(s, 0)
        lo = await rt.gopen(s, 0)
        prio[hi.cid], prio[lo.cid] = 30, 10
        keep = await rt.gmalloc(hi, 6 * MiB)
        with pytest.raises(GdevError) as info:             # only hi's object could go
            await rt.gmalloc(lo, 4 * MiB)
        assert info.value.errno == errno.ENOMEM
        assert hi.lookup(keep).block.resident_bytes == 6 * MiB
        small = await rt.gmalloc(lo, 2 * MiB)               # fits without swapping
        await rt.gmalloc(hi, 2 * MiB)                       # hi pushes lo's object out
        assert lo.lookup(small).block.resident_bytes == 0
        assert hi.lookup(keep).block.resident_bytes == 6 * MiB
    run_swappy(body)


def test_shrinking_a_share_swaps_the_excess_out_without_loss() -> None:
    async def body(s: rt.GdevSystem) -> None:
        from procfs import write_entry
        from procfs.table import ENTRIES
        share = next(e for e in ENTRIES if e.name == "memory_share")
        h = await rt.gopen(s, 1)
        vas = [await rt.gmalloc(h, MiB) for _ in range(6)]
        for i, va in enumerate(vas):
            await rt.gmemcpy_to_device(h, va, pattern(i, MiB), MiB)
        v = s.virtual[1]
        write_entry(share, v, 0, b"10\n")                   # 3.2 MiB < 6 MiB resident
        await settle_all(s)
        assert v.memory_used <= v.memory_size and v.swap.swapped_bytes >= 3 * MiB
        for i, va in enumerate(vas):
            assert np.array_equal(await read_back(h, va, MiB), pattern(i, MiB))
        q = await rt.gquery(h, rt.GDEV_QUERY_DEVICE_MEM_FREE)
        assert q == v.memory_size - v.memory_used
    run_swappy(body)


def test_swap_percent_is_a_live_tunable_refused_while_in_use() -> None:
    async def body(s: rt.GdevSystem) -> None:
        from procfs import read_entry, write_entry
        from procfs.table import ENTRIES
        by = {e.name: e for e in ENTRIES}
        area = s.gpus[0].swap
        assert read_entry(by["swap_size"], s) == b"%d\n" % area.device_size
        write_entry(by["swap_percent"], s, 0, b"0")
        assert area.device_size == 0 and s.gpus[0].allocator.used_bytes == 0
        write_entry(by["swap_percent"], s, 0, b"20")
        assert area.device_size == s.physical[0].memory_size // 5 // 4096 * 4096
        with pytest.raises(GdevError) as info:
            write_entry(by["swap_percent"], s, 0, b"51")
        assert info.value.errno == errno.EINVAL and area.percent == 20
        h = await rt.gopen(s, 0)
        a = await rt.gmalloc(h, 4 * MiB)
        await rt.gmemcpy_to_device(h, a, pattern(4, 4 * MiB), 4 * MiB)
        await rt.gmalloc(h, 6 * MiB)                        # a goes to the device area ...
        await settle_all(s)                                 # ... and stays (no host swap)
        assert area.device_used == 4 * MiB and area.host_used == 0
        with pytest.raises(GdevError) as info:
            write_entry(by["swap_percent"], s, 0, b"10")
        assert info.value.errno == errno.EBUSY and area.percent == 20
        assert np.array_equal(await read_back(h, a, 4 * MiB), pattern(4, 4 * MiB))
    run_swappy(body, host_swap=0)


class Ticker:
    """A task that counts how often the loop lets it run (once per schedule point)."""

    def __init__(self) -> None:
        self.ticks = 0

    async def run(self) -> None:
        while True:
            self.ticks += 1
            await trio.lowlevel.checkpoint()


def test_copies_to_resident_pages_skip_the_swap_in_lock_unless_a_swap_in_runs() -> None:
    """Uncontended, a copy whose pages are all resident takes no lock and no schedule point
    (fewer than PIN_BURST of them never let another task run, more do); while a swap-in
    holds the GPU's lock, copies queue behind it, so small copies cannot starve a swap-in."""
    async def hold(lock: trio.Lock, release: trio.Event, *,
                   task_status: trio.TaskStatus = trio.TASK_STATUS_IGNORED) -> None:
        async with lock:                               # a swap-in in progress elsewhere
            task_status.started()
            await release.wait()

    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        a = await rt.gmalloc(h, MiB)
        data, ticker = pattern(3, 4096), Ticker()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ticker.run)
            await trio.sleep(0)
            h.counters.unyielded_pins, before = 0, ticker.ticks
            for _ in range(PIN_BURST - 1):
                await rt.gmemcpy_to_device(h, a, data, data.size)
            assert ticker.ticks == before, "a copy to resident pages yielded"
            for _ in range(10 * PIN_BURST):
                await rt.gmemcpy_to_device(h, a, data, data.size)
            assert ticker.ticks - before >= 9, "the loop never left a run of small copies"
            release = trio.Event()
            await nursery.start(hold, h.gpu.swap.swapin, release)
            with trio.move_on_after(0.2) as waited:
                await rt.gmemcpy_to_device(h, a, data, data.size)
            assert waited.cancelled_caught, "a copy overtook a running swap-in"
            release.set()
            nursery.cancel_scope.cancel()
        await rt.gmemcpy_to_device(h, a, data, data.size)
        assert np.array_equal(await read_back(h, a, data.size), data)
    run_swappy(body)


def test_an_allocation_evicts_a_block_that_small_copies_keep_touching() -> None:
    """One context copies to its block in a tight loop; another context of the same vGPU
    needs that block's memory.  The allocation must not wait for a gap in the pins forever:
    every PIN_BURST-th copy yields before it pins."""
    async def body(s: rt.GdevSystem) -> None:
        h, other = await rt.gopen(s, 0), await rt.gopen(s, 0)
        a = await rt.gmalloc(h, 6 * MiB)
        data, copies = pattern(5, 256), 0

        async def hammer() -> None:
            nonlocal copies
            while True:
                await rt.gmemcpy_to_device(h, a, data, data.size)
                copies += 1
        async with trio.open_nursery() as nursery:
            nursery.start_soon(hammer)
            await trio.sleep(0.05)
            with trio.fail_after(10):
                b = await rt.gmalloc(other, 6 * MiB)        # share is 8 MiB: a must go out
            nursery.cancel_scope.cancel()
        assert copies > 0
        await rt.gfree(other, b)
        assert np.array_equal(await read_back(h, a, data.size), data)
    run_swappy(body)
