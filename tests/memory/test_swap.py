"""Swapping: eviction on a full share or device, swap-in on touch, no byte lost."""

from __future__ import annotations

import errno

import numpy as np
import pytest

from gdevd import runtime as rt
from gdevd.errors import GdevError

from .conftest import MiB, pattern, read_back, run_swappy, settle_all


def test_full_share_swaps_out_the_old_object_and_data_survive() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        a = await rt.gmalloc(h, 6 * MiB)
        da = pattern(1, 6 * MiB)
        await rt.gmemcpy_to_device(h, a, da, da.size)
        b = await rt.gmalloc(h, 6 * MiB)                   # share is 8 MiB: a goes out
        assert h.lookup(a).block.resident_bytes == 0
        assert s.virtual[0].memory_used == 6 * MiB
        assert s.virtual[0].swap.swap_out_bytes == 6 * MiB == h.swap.swapped_bytes
        db = pattern(2, 6 * MiB)
        await rt.gmemcpy_to_device(h, b, db, db.size)       # b is resident: no swap
        await settle_all(s)
        s.check_invariants()
        assert np.array_equal(await read_back(h, a, da.size), da)   # served from swap
        assert h.copy_stats["swap"] == 1 and h.lookup(a).block.resident_bytes == 0
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
