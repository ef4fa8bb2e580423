"""Concurrent streams of one context (gdevd/runtime/streams.py, the engine's running set).

Overlap is proven by construction, never by timing: ``handshake`` (kernels/streams.cu)
raises its own flag and spins until two others are raised, so two handshakes end only if
they ran at the same time, and a copy that reads both flags while they spin ran beside them.
Work that is wrongly serialized spins until the vGPU's watchdog kills it (ETIME)."""

from __future__ import annotations

import errno
import struct
from pathlib import Path

import numpy as np
import pytest
import trio

from gdevd import runtime as rt
from gdevd.runtime.sched import COMPUTE
from gdevd.runtime.streams import STREAM_NON_BLOCKING, STREAMS_MAX

from ..runtime.conftest import raises_errno, run_system
from .kernels import LoopModule
from .test_preempt import loop_kernel, loop_model

PTX = (Path(__file__).resolve().parents[2] / "kernels" / "streams.ptx").read_bytes()
FLAGS = 64 << 10            # the flag words sit at the start of a buffer the copy engine moves
WATCHDOG_MS = 20_000        # how long a wrongly serialized handshake spins before failing


class Handshakes:
    """kernels/streams.ptx and a zeroed flag buffer in one context."""

    def __init__(self, h: rt.Handle, code: int, flags: int) -> None:
        self.h, self.code, self.flags = h, code, flags

    @classmethod
    async def load(cls, h: rt.Handle) -> Handshakes:
        h.vgpu.watchdog_ms = WATCHDOG_MS
        code = await rt.gmalloc(h, len(PTX))
        await rt.gmemcpy_to_device(h, code, PTX, len(PTX))
        flags = await rt.gmalloc(h, FLAGS)
        await rt.gmemcpy_to_device(h, flags, bytes(FLAGS), FLAGS)
        return cls(h, code, flags)

    def kernel(self, me: int, a: int, b: int) -> rt.GdevKernel:
        """Raise flag ``me``, wait for flags ``a`` and ``b``."""
        return rt.GdevKernel(self.code, len(PTX), "handshake",
                             params=struct.pack("<QIII", self.flags, me, a, b))

    async def read(self, stream: int) -> np.ndarray:
        """The flag words, read by the copy engine (pageable, above the direct limit) in
        ``stream``."""
        out = np.zeros(FLAGS // 4, np.uint32)
        assert await rt.gmemcpy_from_device_async(self.h, out, self.flags, FLAGS,
                                                  stream=stream) == 0
        return out[:3]

    async def raise_flag(self, i: int, stream: int) -> None:
        """Write flag ``i`` with a copy in ``stream``."""
        await rt.gmemcpy_to_device_async(self.h, self.flags + 4 * i, struct.pack("<I", 1), 4,
                                         stream=stream)


async def _until_flags(hs: Handshakes, stream: int, want: list[int]) -> np.ndarray:
    with trio.fail_after(60):
        while list(flags := await hs.read(stream))[:len(want)] != want:
            await trio.sleep(0.005)
    return flags


def test_two_kernels_and_a_copy_on_three_streams_run_at_the_same_time() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        hs = await Handshakes.load(h)
        s1, s2, s3 = [await rt.gstream_create(h) for _ in range(3)]
        f1 = await rt.glaunch(h, hs.kernel(0, 1, 2), s1)
        f2 = await rt.glaunch(h, hs.kernel(1, 0, 2), s2)
        # Both flags raised, read by the copy engine in a third stream while neither kernel
        # can have finished (flag 2 is still down): the three ran side by side.
        await _until_flags(hs, s3, [1, 1, 0])
        await hs.raise_flag(2, s3)
        await rt.gsync(h, f1)
        await rt.gsync(h, f2)
        assert s.physical[0].compute.overlapped >= 1
        u = s.scheduler.entity(h).usage
        assert u.launches == 2 and u.timeouts == 0
    run_system(body)


def test_work_of_one_stream_stays_in_order() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        hs = await Handshakes.load(h)
        s.virtual[0].watchdog_ms = 300              # the first handshake waits for nothing
        await hs.raise_flag(2, 0)
        st = await rt.gstream_create(h)
        first = await rt.glaunch(h, hs.kernel(0, 1, 2), st)
        await rt.glaunch(h, hs.kernel(1, 0, 2), st)
        with raises_errno(errno.ETIME):
            await rt.gsync(h, first)                # killed: the second never ran beside it
    run_system(body)


def test_a_stream_wait_orders_work_behind_another_streams_fence() -> None:
    size, n = 256, 3000

    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        m = await LoopModule.load(h)
        data, copy = await rt.gmalloc(h, 4 * size), await rt.gmalloc(h, 4 * size)
        a, b = await rt.gstream_create(h), await rt.gstream_create(h, STREAM_NON_BLOCKING)
        fence = await rt.glaunch(h, loop_kernel(m, data, size, n), a)
        await rt.gstream_wait(h, b, fence)
        await rt.gmemcpy_async(h, copy, data, 4 * size, stream=b)
        await rt.gstream_sync(h, b)
        assert fence not in h.pending                 # the wait covered the launch
        out = bytearray(4 * size)
        await rt.gmemcpy_from_device(h, out, copy, len(out))
        assert np.array_equal(np.frombuffer(bytes(out), np.uint32), loop_model(size, n))
    run_system(body)


def test_a_non_blocking_stream_runs_beside_the_legacy_stream() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        hs = await Handshakes.load(h)
        nb, reader = [await rt.gstream_create(h, STREAM_NON_BLOCKING) for _ in range(2)]
        f1 = await rt.glaunch(h, hs.kernel(0, 1, 2), nb)
        f2 = await rt.glaunch(h, hs.kernel(1, 0, 2))          # the legacy stream
        await _until_flags(hs, reader, [1, 1, 0])
        await hs.raise_flag(2, reader)
        await rt.gbarrier(h)
        assert f1 not in h.pending and f2 not in h.pending
    run_system(body)


def test_the_legacy_stream_waits_for_blocking_streams() -> None:
    size, n = 256, 3000

    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        m = await LoopModule.load(h)
        data = await rt.gmalloc(h, 4 * size)
        st = await rt.gstream_create(h)
        await rt.glaunch(h, loop_kernel(m, data, size, n), st)
        out = bytearray(4 * size)
        await rt.gmemcpy_from_device(h, out, data, len(out))   # legacy: after the launch
        assert np.array_equal(np.frombuffer(bytes(out), np.uint32), loop_model(size, n))
    run_system(body)


def test_a_free_waits_for_every_stream_even_non_blocking_ones() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        hs = await Handshakes.load(h)
        victim = await rt.gmalloc(h, 4096)
        h.mmu.write(hs.flags + 4, struct.pack("<I", 1))       # flag 1 up: waits for 2 only
        nb = await rt.gstream_create(h, STREAM_NON_BLOCKING)
        fence = await rt.glaunch(h, hs.kernel(0, 1, 2), nb)
        freed = trio.Event()

        async def free() -> None:
            await rt.gfree(h, victim)
            freed.set()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(free)
            with trio.fail_after(60):           # the kernel runs (every stream is held by
                while h.mmu.read(hs.flags, 4) != b"\1\0\0\0":   # the free: read the
                    await trio.sleep(0.005)                      # memory itself)
            await trio.sleep(0.05)
            assert not freed.is_set() and fence in h.pending
            h.mmu.write(hs.flags + 8, struct.pack("<I", 1))   # let the kernel end
        assert fence not in h.pending
    run_system(body)


def test_destroyed_streams_still_drain_and_bad_ids_are_refused() -> None:
    size, n = 256, 2000

    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        m = await LoopModule.load(h)
        data = await rt.gmalloc(h, 4 * size)
        st = await rt.gstream_create(h, STREAM_NON_BLOCKING)
        fence = await rt.glaunch(h, loop_kernel(m, data, size, n), st)
        await rt.gstream_destroy(h, st)
        await rt.gbarrier(h)
        assert fence not in h.pending
        for bad in (st, 0, -1, 2**40, True):
            with raises_errno(errno.EINVAL):
                await rt.gstream_destroy(h, bad)
        with raises_errno(errno.EINVAL):
            await rt.glaunch(h, m.idle(1), st)
        with raises_errno(errno.EINVAL):
            await rt.gstream_create(h, 0x10)
        with raises_errno(errno.EINVAL):
            await rt.gstream_wait(h, 0, 4096)
        with raises_errno(errno.EMFILE):
            for _ in range(STREAMS_MAX):
                await rt.gstream_create(h)
        assert len(h.streams) == STREAMS_MAX
    run_system(body)


def test_stream_sync_polls_and_reports_etime() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        hs = await Handshakes.load(h)
        h.mmu.write(hs.flags + 4, struct.pack("<I", 1))
        st = await rt.gstream_create(h)
        await rt.glaunch(h, hs.kernel(0, 1, 2), st)
        with raises_errno(errno.ETIME):
            await rt.gstream_sync(h, st, 0)
        with raises_errno(errno.ETIME):
            await rt.gstream_sync(h, 0, 0)                  # legacy covers blocking streams
        h.mmu.write(hs.flags + 8, struct.pack("<I", 1))
        await rt.gstream_sync(h, st)
        await rt.gstream_sync(h, 0, 0)
    run_system(body)


@pytest.mark.parametrize("streams", [1, 2])
def test_two_busy_streams_are_charged_one_makespan(streams: int) -> None:
    size, n = 512, 4000

    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        m = await LoopModule.load(h)
        ids = [await rt.gstream_create(h) for _ in range(streams)]
        bufs = [await rt.gmalloc(h, 4 * size) for _ in range(2)]
        t0 = trio.current_time()
        for i, buf in enumerate(bufs):
            await rt.glaunch(h, loop_kernel(m, buf, size, n), ids[i % streams])
        await rt.gbarrier(h)
        wall = trio.current_time() - t0
        u = s.scheduler.entity(h).usage
        assert u.launches == 2
        assert u.compute_s <= wall          # busy time is the makespan, never the sum
        vres = s.scheduler.vres(s.virtual[0], COMPUTE)
        assert vres.usage.compute_s == pytest.approx(u.compute_s)
    run_system(body)


def test_a_context_with_two_streams_is_preempted_whole_and_resumes_exactly() -> None:
    size, n = 512, 8000

    async def body(s: rt.GdevSystem) -> list:
        s.scheduler.preempter.slice_s = 0.002
        s.scheduler.trace = []
        a, b = await rt.gopen(s, 0), await rt.gopen(s, 0)
        ma, mb = await LoopModule.load(a), await LoopModule.load(b)
        bufs = [await rt.gmalloc(a, 4 * size) for _ in range(2)] + [await rt.gmalloc(b, 4 * size)]
        streams = [await rt.gstream_create(a) for _ in range(2)]
        for buf, st in zip(bufs, streams, strict=False):
            await rt.glaunch(a, loop_kernel(ma, buf, size, n), st)
        await rt.glaunch(b, loop_kernel(mb, bufs[2], size, n))
        await rt.gbarrier(a)
        await rt.gbarrier(b)
        for h, buf in ((a, bufs[0]), (a, bufs[1]), (b, bufs[2])):
            out = bytearray(4 * size)
            await rt.gmemcpy_from_device(h, out, buf, len(out))
            assert np.array_equal(np.frombuffer(bytes(out), np.uint32), loop_model(size, n))
        ua = s.scheduler.entity(a).usage
        assert ua.launches == 2 and ua.preemptions >= 1
        # a's busy intervals never overlap each other: its two streams share one slice
        spans = sorted((t0, t1) for _, kind, cid, t0, t1 in s.scheduler.trace
                       if kind == COMPUTE and cid == a.cid)
        assert all(e <= s2 for (_, e), (s2, _) in zip(spans, spans[1:], strict=False))
        return [cid for _, kind, cid, _, _ in sorted(s.scheduler.trace, key=lambda t: t[3])
                if kind == COMPUTE]
    order = run_system(body)
    assert sum(x != y for x, y in zip(order, order[1:], strict=False)) >= 3   # A B A B ...


def test_many_waits_on_one_fence_hold_one_reference_and_start_no_task() -> None:
    """A hostile tenant repeating cuStreamWaitEvent on a fence that will not complete soon
    grows nothing: the stream holds the awaited event once."""
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        hs = await Handshakes.load(h)
        h.mmu.write(hs.flags + 4, struct.pack("<I", 1))
        a, b = await rt.gstream_create(h), await rt.gstream_create(h, STREAM_NON_BLOCKING)
        fence = await rt.glaunch(h, hs.kernel(0, 1, 2), a)
        tasks = len(s.nursery.child_tasks) if s.nursery is not None else 0
        for _ in range(1000):
            await rt.gstream_wait(h, b, fence)
        st = h.streams.get(b)
        assert len(st.waits) == 1 and s.nursery is not None
        assert len(s.nursery.child_tasks) == tasks
        with raises_errno(errno.ETIME):
            await rt.gstream_sync(h, b, 0)                 # b waits for the spinning kernel
        h.mmu.write(hs.flags + 8, struct.pack("<I", 1))
        await rt.gstream_sync(h, b)
        await rt.gmemcpy_async(h, hs.flags + 64, hs.flags, 4, stream=b)
        assert st.waits == []                            # the copy's completion covers it
        await rt.gbarrier(h)
    run_system(body)
