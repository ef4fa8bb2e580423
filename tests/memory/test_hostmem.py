"""The host-memory descriptor: built once, checked once, pinned by what owns the bytes."""

from __future__ import annotations

import errno

import numpy as np
import pytest

from gdevd import runtime as rt
from gdevd.runtime import constants as C
from gdevd.runtime import hostmem

from ..runtime.conftest import MiB, raises_errno, run_system

BIG = 64 << 10          # above SMALL's direct-I/O limits: the pinned or bounce paths


@pytest.mark.parametrize("offset,size,err", [
    (-1, 1, errno.EINVAL), (0, -1, errno.EINVAL), (True, 1, errno.EINVAL),
    (0, 1.0, errno.EINVAL), (4096, 1, errno.EFAULT), (1, 4096, errno.EFAULT),
    ((1 << 64) - 1, 2, errno.EFAULT), (0, 1 << 70, errno.EFAULT),
])
def test_a_range_outside_its_buffer_is_refused(offset: object, size: object, err: int) -> None:
    with raises_errno(err):
        hostmem.check_range(offset, size, 4096, "buffer")


def test_a_range_inside_its_buffer_is_accepted() -> None:
    assert hostmem.check_range(0, 4096, 4096, "buffer") == (0, 4096)
    assert hostmem.check_range(4096, 0, 4096, "buffer") == (4096, 0)


def test_an_inline_payload_is_used_where_it_lies() -> None:
    payload = memoryview(bytearray(range(256)))
    host = hostmem.inline(payload)
    assert host.pinned is None and host.size == 256
    assert np.shares_memory(host.array, np.frombuffer(payload, np.uint8))


def test_views_of_a_pinned_buffer_are_known_as_pinned_without_a_search() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        other = await rt.gopen(s, 1)
        buf = await rt.gmalloc_dma(h, 2 * BIG)
        objects = h.space.objects
        mapping = buf.mapping
        for view in (buf, buf.array, buf.array[100:200], memoryview(buf.array)[BIG:],
                     np.frombuffer(memoryview(buf.array[8:]).cast("B"), np.uint8)):
            assert hostmem.pinned_holding(objects, view) is mapping
        copy = buf.array.copy()                           # the same bytes, not pinned memory
        assert hostmem.pinned_holding(objects, copy) is None
        assert hostmem.pinned_holding(other.space.objects, buf) is None   # not its buffer
        assert hostmem.pinned_holding(other.space.objects, buf.array) is None
        strided = np.lib.stride_tricks.as_strided(buf.array, (4 * BIG,), (1,))
        assert hostmem.pinned_holding(objects, strided) is None          # runs past it
    run_system(body)


def test_a_pinned_view_takes_the_pinned_path_and_a_copy_of_it_does_not() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        buf = await rt.gmalloc_dma(h, 2 * BIG)
        va = await rt.gmalloc(h, BIG)
        buf.array[:] = np.arange(2 * BIG, dtype=np.uint8)
        await rt.gmemcpy_to_device(h, va, buf.array[BIG:], BIG)
        assert h.counters.copies[C.PATH_PINNED] == 1
        await rt.gmemcpy_to_device(h, va, buf.array[BIG:].copy(), BIG)
        assert h.counters.copies[C.PATH_PINNED] == 1
        out = await rt.gmalloc_dma(h, BIG)
        fence = await rt.gmemcpy_from_device_async(h, out.array, va, BIG)
        assert fence != 0                                 # pinned: truly asynchronous
        await rt.gsync(h, fence)
        assert np.array_equal(out.array, buf.array[BIG:])
    run_system(body)


def test_a_descriptor_is_checked_against_the_copy_and_the_context() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        other = await rt.gopen(s, 1)
        buf = await rt.gmalloc_dma(h, BIG)
        va = await rt.gmalloc(other, BIG)
        host = hostmem.in_pinned(buf, 0, BIG, "pinned buffer")
        with raises_errno(errno.ENOENT):                  # h's buffer named to another context
            await rt.gmemcpy_to_device(other, va, host, BIG)
        with raises_errno(errno.EINVAL):                  # sizes disagree
            await rt.gmemcpy_to_device(other, va, hostmem.inline(b"abc"), 4)
        with raises_errno(errno.EINVAL):                  # read-only bytes as a destination
            await rt.gmemcpy_from_device(other, hostmem.inline(b"abcd"), va, 4)
        with raises_errno(errno.EFAULT):
            hostmem.in_pinned(buf, BIG - 8, 16, "pinned buffer")
        await rt.gfree_dma(h, buf)
        assert hostmem.pinned_holding(h.space.objects, buf) is None      # freed: not pinned
    run_system(body)


def test_gref_of_a_pinned_buffer_is_pinned_in_both_contexts_until_each_drops_it() -> None:
    async def body(s: rt.GdevSystem) -> None:
        master = await rt.gopen(s, 0)
        slave = await rt.gopen(s, 1)
        buf = await rt.gmalloc_dma(master, MiB)
        addr = await rt.gref(master, buf.va, MiB, slave)
        assert hostmem.pinned_holding(slave.space.objects, buf.array[10:]) is not None
        assert await rt.gvirtget(slave, buf.array[10:20]) == addr + 10
        await rt.gfree_dma(master, buf)
        assert hostmem.pinned_holding(master.space.objects, buf.array) is None
        assert hostmem.pinned_holding(slave.space.objects, buf.array) is not None
        await rt.gunref(slave, addr)
        assert hostmem.pinned_holding(slave.space.objects, buf.array) is None
    run_system(body)
