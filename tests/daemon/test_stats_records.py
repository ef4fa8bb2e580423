"""The runtime's statistics records and validated setters that procfs reads and calls
(gdevd/runtime/stats.py, tunables.py), in-process on a real system."""

from __future__ import annotations

import errno

import numpy as np
import pytest
import trio

from gdevd import runtime as rt
from gdevd.errors import GdevError
from gdevd.runtime import stats as R
from gdevd.runtime import tunables as T


def run(body) -> None:  # type: ignore[no-untyped-def]
    async def main() -> None:
        config = rt.GdevConfig(memory=64 << 20, iowrite_limit=4096, ioread_limit=4096)
        async with rt.GdevSystem(config) as system:
            await body(system)
            system.check_invariants()
    trio.run(main)


def test_records_follow_what_the_contexts_did() -> None:
    async def body(system: rt.GdevSystem) -> None:
        h = await rt.gopen(system, 1)
        data = np.arange(1 << 16, dtype=np.uint8)
        va = await rt.gmalloc(h, data.nbytes)
        await rt.gmemcpy_to_device(h, va, data, data.nbytes)
        [c] = R.context_stats(system)
        assert (c.cid, c.vgpu, c.memory, c.copies, c.bytes_copied) == \
            (h.cid, 1, data.nbytes, 1, data.nbytes)
        assert dict(c.copy_paths) == {"chunked": 1}     # 64 KiB < one 4 MiB chunk
        v = R.vgpu_stats(system.virtual[1])
        assert (v.shares.minor, v.shares.memory_used, v.shares.contexts) == \
            (1, data.nbytes, 1)
        assert v.usage.copies == 1 and v.usage.bytes_copied == data.nbytes
        assert R.vgpu_shares(system.virtual[0]).contexts == 0
        assert R.system_stats(system).virtual_device_count == 4
    run(body)


def test_setters_refuse_before_changing_anything() -> None:
    async def body(system: rt.GdevSystem) -> None:
        v = system.virtual[0]
        with pytest.raises(GdevError) as info:
            T.set_share(v, "compute_bandwidth", 26)     # the three others hold 75 %
        assert info.value.errno == errno.EINVAL and "at most 25% is free" in str(info.value)
        assert v.compute_bandwidth == 25
        with pytest.raises(GdevError):
            T.set_copy_tunable(system, "chunk_size", 4097)
        with pytest.raises(GdevError):
            T.set_sched_knob(system, "slice_us", -1)
        assert R.system_stats(system).chunk_size == rt.GdevConfig().chunk_size
        T.set_copy_tunable(system, "chunk_size", 8192)
        h = await rt.gopen(system, 0)                   # a context opened after the write
        assert h.bounce.chunk_size == 8192
        T.set_sched_knob(system, "band_wait_us", 250)
        assert R.scheduler_stats(system).band_wait_us == 250
    run(body)
