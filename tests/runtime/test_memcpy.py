"""Every memcpy path round-trips data, is chosen as the paper says, and rejects bad input."""

from __future__ import annotations

import errno

import hypothesis.strategies as st
import numpy as np
import pytest
import trio
from hypothesis import given, settings

from gdevd import runtime as rt
from gdevd.runtime import constants as C

from .conftest import MiB, raises_errno, run_system

CHUNK = 64 << 10                       # conftest.SMALL's chunk size


def _data(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


@pytest.mark.parametrize("size,depth,path", [
    (1, 2, C.PATH_DIRECT), (4096, 2, C.PATH_DIRECT),
    (4097, 2, C.PATH_CHUNKED), (CHUNK, 2, C.PATH_CHUNKED),     # one chunk: nothing to overlap
    (CHUNK + 1, 2, C.PATH_PIPELINED), (5 * CHUNK + 123, 3, C.PATH_PIPELINED),
    (5 * CHUNK + 123, 1, C.PATH_CHUNKED), (2 * MiB, 4, C.PATH_PIPELINED),
])
def test_pageable_round_trip_takes_the_expected_path(size: int, depth: int, path: str) -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        await rt.gtune(h, C.GDEV_TUNE_MEMCPY_PIPELINE_COUNT, depth)
        va = await rt.gmalloc(h, size + 8192)
        data = _data(size)
        await rt.gmemcpy_to_device(h, va + 4095, data, size)     # unaligned device side
        out = np.zeros(size, np.uint8)
        await rt.gmemcpy_from_device(h, out, va + 4095, size)
        assert np.array_equal(out, data)
        assert h.counters.copies[path] == 2 and h.counters.copies[path + "_bytes"] == 2 * size
    run_system(body)


def test_pinned_round_trip_is_one_copy_and_async() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        n = 3 * MiB + 5
        src, dst = await rt.gmalloc_dma(h, n), await rt.gmalloc_dma(h, n)
        src.array[:n] = _data(n, 1)
        va = await rt.gmalloc(h, n)
        fid = await rt.gmemcpy_to_device_async(h, va, src, n)
        assert 1 <= fid < 4096
        fid2 = await rt.gmemcpy_from_device_async(h, dst.array[:n], va, n)
        assert fid2 == fid + 1
        await rt.gsync(h, fid2)                # in order: the HtoD finished before the DtoH
        assert np.array_equal(dst.array[:n], src.array[:n])
        assert h.counters.copies[C.PATH_PINNED] == 2 and h.counters.copies[C.PATH_CHUNKED] == 0
        await rt.gmemcpy_to_device(h, va, src.array[10:MiB], MiB - 10)  # a view of a pinned buffer
        assert h.counters.copies[C.PATH_PINNED] == 3
        await rt.gsync(h, fid)                  # already done: returns at once
    run_system(body)


def test_async_of_pageable_or_small_copies_is_synchronous_with_id_0() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        va = await rt.gmalloc(h, MiB)
        buf = await rt.gmalloc_dma(h, MiB)
        assert await rt.gmemcpy_to_device_async(h, va, _data(MiB), MiB) == 0
        assert await rt.gmemcpy_to_device_async(h, va, buf, 100) == 0      # small: direct
        out = np.zeros(MiB, np.uint8)
        assert await rt.gmemcpy_from_device_async(h, out, va, MiB) == 0
        assert await rt.gsync(h, 0) is None
        assert out[100] == _data(MiB)[100] and not out[:100].any()
    run_system(body)


def test_gmemcpy_device_to_device_and_pinned_in_unified_space() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        n = MiB + 77
        a, b = await rt.gmalloc(h, n), await rt.gmalloc(h, n)
        pin = await rt.gmalloc_dma(h, n)
        data = _data(n, 2)
        await rt.gmemcpy_to_device(h, a, data, n)
        await rt.gmemcpy(h, b, a, n)                              # DtoD
        await rt.gmemcpy(h, pin.va, b, n)                         # device -> pinned, by VA
        assert np.array_equal(pin.array[:n], data)
        await rt.gmemcpy(h, a + 1, pin.va, 100)                   # small: direct
        fid = await rt.gmemcpy_async(h, b, a, n)
        await rt.gsync(h, fid)
        out = np.zeros(n, np.uint8)
        await rt.gmemcpy_from_device(h, out, b, n)
        assert np.array_equal(out[1:101], data[:100]) and np.array_equal(out[101:], data[101:])
        assert h.counters.copies[C.PATH_DEVICE] == 4
    run_system(body)


def test_memcpy_errors() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h, other = await rt.gopen(s, 0), await rt.gopen(s, 1)
        va = await rt.gmalloc(h, 8192)
        ova = await rt.gmalloc(other, 8192 * 4)
        buf = bytearray(8192)
        for size in (0, -1, 1.0):
            with raises_errno(errno.EINVAL):
                await rt.gmemcpy_to_device(h, va, buf, size)  # type: ignore[arg-type]
        with raises_errno(errno.EINVAL):
            await rt.gmemcpy_to_device(h, va, buf, 8193)          # host buffer too short
        with raises_errno(errno.EINVAL):
            await rt.gmemcpy_from_device(h, b"x" * 10, va, 10)    # read-only destination
        with raises_errno(errno.EINVAL):
            await rt.gmemcpy_to_device(h, va, np.zeros((4, 4))[:, ::2], 8)  # not contiguous
        with raises_errno(errno.EINVAL):
            await rt.gmemcpy_to_device(h, va, 12345, 1)  # type: ignore[arg-type]
        with raises_errno(errno.EFAULT):
            await rt.gmemcpy_to_device(h, va + 4096, buf, 8192)   # runs past the object
        with raises_errno(errno.ENOENT):
            await rt.gmemcpy_to_device(h, ova + 8192 * 3, buf, 1)  # another context's address
        with raises_errno(errno.ENOENT):
            await rt.gmemcpy_from_device(h, buf, 0x1000, 1)
        with raises_errno(errno.ENOENT):
            await rt.gmemcpy(h, va, ova + 8192 * 3, 1)
        with raises_errno(errno.EFAULT):
            await rt.gmemcpy_async(h, va, va, 8193)
        with raises_errno(errno.ENOENT):
            await rt.gmemcpy_to_device_async(h, 0, buf, 1)
    run_system(body)


def test_copies_of_one_handle_run_in_order() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        n = 2 * MiB
        va = await rt.gmalloc(h, n)
        pins = [await rt.gmalloc_dma(h, n) for _ in range(4)]
        for i, p in enumerate(pins):
            p.array[:] = i + 1
        ids = [await rt.gmemcpy_to_device_async(h, va, p, n) for p in pins]
        out = np.zeros(n, np.uint8)
        await rt.gmemcpy_from_device(h, out, va, n)      # a sync copy waits for all of them
        assert (out == 4).all()
        assert not h.pending and len(set(ids)) == 4
    run_system(body)


def test_concurrent_contexts_copy_independently() -> None:
    async def body(s: rt.GdevSystem) -> None:
        async def worker(minor: int) -> None:
            h = await rt.gopen(s, minor)
            n = MiB + minor
            va = await rt.gmalloc(h, n)
            data = _data(n, minor)
            for _ in range(3):
                await rt.gmemcpy_to_device(h, va, data, n)
                out = np.zeros(n, np.uint8)
                await rt.gmemcpy_from_device(h, out, va, n)
                assert np.array_equal(out, data)
            await rt.gclose(h)
        async with trio.open_nursery() as n:
            for minor in range(4):
                n.start_soon(worker, minor)
    run_system(body)


@settings(max_examples=25, deadline=None)
@given(size=st.integers(1, 300 << 10), offset=st.integers(0, 5000), depth=st.integers(1, 4),
       chunk_pages=st.integers(1, 20), pinned=st.booleans())
def test_round_trip_model(size: int, offset: int, depth: int, chunk_pages: int,
                          pinned: bool) -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        await rt.gtune(h, C.GDEV_TUNE_MEMCPY_PIPELINE_COUNT, depth)
        await rt.gtune(h, C.GDEV_TUNE_MEMCPY_CHUNK_SIZE, chunk_pages * 4096)
        va = await rt.gmalloc(h, size + offset)
        data = _data(size, size)
        src = (await rt.gmalloc_dma(h, size)).array[:size] if pinned else data.copy()
        src[:] = data
        await rt.gmemcpy_to_device(h, va + offset, src, size)
        out = (await rt.gmalloc_dma(h, size)).array[:size] if pinned else np.empty(size, np.uint8)
        await rt.gmemcpy_from_device(h, out, va + offset, size)
        assert np.array_equal(out, data)
    run_system(body)


@settings(max_examples=200, deadline=None)
@given(src=st.integers(0, 1 << 40), dst=st.integers(0, 1 << 40))
def test_bounce_slots_avoid_small_relative_page_offsets(src: int, dst: int) -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        bounce = h.bounce.placed_for(src, dst)
        b = bounce.ctypes.data
        assert bounce.size == h.bounce.chunk_size * h.bounce.pipeline_count
        for rel in ((b - src) % 4096, (dst - b) % 4096):
            assert rel == 0 or rel >= 2048, rel
    run_system(body)


def test_fence_ids_wrap_to_1_and_skip_0() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        va = await rt.gmalloc(h, 2 * 8192)
        h._seq = 4093                                     # as if 4093 operations ran before
        ids = [await rt.gmemcpy_async(h, va, va + 8192, 8192) for _ in range(4)]
        assert ids == [4094, 4095, 1, 2]
        await rt.gbarrier(h)
        assert not h.pending
    run_system(body)
