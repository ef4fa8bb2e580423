"""gmalloc, gfree, gmalloc_dma, gfree_dma, gref, gunref, gvirtget: success and errors."""

from __future__ import annotations

import errno
import os

import numpy as np
import pytest

from gdevd import runtime as rt
from gdevd.runtime import defaults as D

from .conftest import MiB, raises_errno, run_system


def test_gmalloc_rounds_to_pages_charges_and_frees() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        va = await rt.gmalloc(h, 5000)
        assert D.VAS_USER_START <= va < D.VAS_USER_END and va % 4096 == 0
        assert s.virtual[0].memory_used == 8192
        s.check_invariants()
        assert await rt.gfree(h, va + 4999) == 8192        # containment, as in Gdev
        assert s.virtual[0].memory_used == 0
    run_system(body)


@pytest.mark.parametrize("size", [0, -1, -4096, 1.5, "4096", None, True])
def test_gmalloc_bad_size(size: object) -> None:
    async def body(s: rt.GdevSystem) -> None:
        with raises_errno(errno.EINVAL):
            await rt.gmalloc(await rt.gopen(s, 0), size)  # type: ignore[arg-type]
    run_system(body)


def test_gmalloc_out_of_memory_against_share_and_device() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        with raises_errno(errno.ENOMEM):
            await rt.gmalloc(h, 16 * MiB + 1)               # the vGPU's share is 16 MiB
        va = await rt.gmalloc(h, 16 * MiB)
        with raises_errno(errno.ENOMEM):
            await rt.gmalloc(h, 1)
        await rt.gfree(h, va)
        for v in s.virtual:                                 # overcommitted shares
            v.memory_share = 100
        big = [await rt.gmalloc(await rt.gopen(s, i), 30 * MiB) for i in (0, 1)]
        with raises_errno(errno.ENOMEM):                    # the device itself is full
            await rt.gmalloc(await rt.gopen(s, 2), 8 * MiB)
        assert len(big) == 2
        s.virtual[3].memory_share = 0
        with raises_errno(errno.ENOMEM):
            await rt.gmalloc(await rt.gopen(s, 3), 4096)
    run_system(body)


def test_fragmented_memory_is_mapped_contiguously() -> None:
    async def body(s: rt.GdevSystem) -> None:
        s.virtual[0].memory_share = 100
        h = await rt.gopen(s, 0)
        vas = [await rt.gmalloc(h, 4 * MiB) for _ in range(16)]   # the whole 64 MiB
        for va in vas[::2]:
            await rt.gfree(h, va)                                 # 8 holes of 4 MiB
        va = await rt.gmalloc(h, 20 * MiB)                        # needs 5 holes
        obj = h.lookup(va)
        assert len(obj.block.extents) == 5
        data = np.random.default_rng(1).integers(0, 256, 20 * MiB, dtype=np.uint8)
        await rt.gmemcpy_to_device(h, va, data, data.size)
        out = np.zeros_like(data)
        await rt.gmemcpy_from_device(h, out, va, out.size)
        assert np.array_equal(out, data)
    run_system(body)


def test_gfree_errors() -> None:
    async def body(s: rt.GdevSystem) -> None:
        a, b = await rt.gopen(s, 0), await rt.gopen(s, 0)
        va = await rt.gmalloc(a, 4096)
        with raises_errno(errno.ENOENT):
            await rt.gfree(b, va)                           # another context's address
        with raises_errno(errno.ENOENT):
            await rt.gfree(a, va + 4096)                    # just past the object
        with raises_errno(errno.ENOENT):
            await rt.gfree(a, 0)
        with raises_errno(errno.EINVAL):
            await rt.gfree(a, "0x20000000")  # type: ignore[arg-type]
        buf = await rt.gmalloc_dma(a, 4096)
        with raises_errno(errno.ENOENT):
            await rt.gfree(a, buf.va)                       # pinned: gfree_dma's job
        await rt.gfree(a, va)
        with raises_errno(errno.ENOENT):
            await rt.gfree(a, va)                           # double free
    run_system(body)


@pytest.mark.parametrize("size", [4096, 1 * MiB, 4 * MiB])   # memset and madvise paths
def test_freed_memory_is_scrubbed_before_reuse(size: int) -> None:
    async def body(s: rt.GdevSystem) -> None:
        a, b = await rt.gopen(s, 0), await rt.gopen(s, 1)
        va = await rt.gmalloc(a, size)
        await rt.gmemcpy_to_device(a, va, np.full(size, 0xAB, np.uint8), size)
        pa = a.lookup(va).block.extents[0][0]
        await rt.gfree(a, va)
        vb = await rt.gmalloc(b, size)
        assert b.lookup(vb).block.extents[0][0] == pa         # first fit reuses the pages
        out = np.ones(size, np.uint8)
        await rt.gmemcpy_from_device(b, out, vb, size)
        assert not out.any()
    run_system(body)


def test_address_spaces_are_isolated() -> None:
    async def body(s: rt.GdevSystem) -> None:
        a, b = await rt.gopen(s, 0), await rt.gopen(s, 0)
        va, vb = await rt.gmalloc(a, 4096), await rt.gmalloc(b, 4096)
        assert va == vb                                       # same VA, different pages
        await rt.gmemcpy_to_device(a, va, b"A" * 4096, 4096)
        await rt.gmemcpy_to_device(b, vb, b"B" * 4096, 4096)
        out = bytearray(4096)
        await rt.gmemcpy_from_device(a, out, va, 4096)
        assert out == b"A" * 4096
        await rt.gfree(b, vb)
        vb2 = await rt.gmalloc(b, 8192)                        # b's VA range grows elsewhere
        with raises_errno(errno.ENOENT):
            await rt.gmemcpy_from_device(a, out, vb2 + 4096, 1)
    run_system(body)


def test_gclose_frees_everything() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 2)
        for _ in range(5):
            await rt.gmalloc(h, 1 * MiB)
        bufs = [await rt.gmalloc_dma(h, 64 << 10) for _ in range(3)]
        fds = [b.fd for b in bufs]
        assert s.virtual[2].memory_used == 5 * MiB and s.virtual[2].dma_used == 192 << 10
        await rt.gclose(h)
        assert s.virtual[2].memory_used == 0 and s.virtual[2].dma_used == 0
        assert s.gpus[0].allocator.used_bytes == 0
        for fd in fds:
            with pytest.raises(OSError):
                os.fstat(fd)
    run_system(body)


def test_dma_buffer_shape_fd_and_gvirtget() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        buf = await rt.gmalloc_dma(h, 10000)
        assert buf.size == 12288 and buf.array.dtype == np.uint8 and len(buf) == 12288
        assert np.asarray(buf) is buf.array
        buf.array[:] = 3
        assert os.pread(buf.fd, 4, 100) == b"\3" * 4         # the memfd is the same memory
        assert await rt.gvirtget(h, buf) == buf.va
        assert await rt.gvirtget(h, buf.array[100:200]) == buf.va + 100
        for bad in (np.zeros(10, np.uint8), b"xyz"):
            with raises_errno(errno.EINVAL):
                await rt.gvirtget(h, bad)
        other = await rt.gopen(s, 0)
        with raises_errno(errno.EINVAL):
            await rt.gvirtget(other, buf)                      # not other's buffer
        assert await rt.gfree_dma(h, buf) == 12288
        with raises_errno(errno.ENOENT):
            await rt.gfree_dma(h, buf)                         # double free
        with raises_errno(errno.EINVAL):
            await rt.gvirtget(h, buf)
    run_system(body)


def test_gmalloc_dma_errors() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        for bad in (0, -5, 2.0):
            with raises_errno(errno.EINVAL):
                await rt.gmalloc_dma(h, bad)  # type: ignore[arg-type]
        with raises_errno(errno.ENOMEM):
            await rt.gmalloc_dma(h, 8 * MiB + 1)               # the vGPU's DMA share
        bufs = [await rt.gmalloc_dma(h, 4096) for _ in range(D.DMA_APERTURES)]
        with raises_errno(errno.ENOMEM):
            await rt.gmalloc_dma(h, 4096)                      # out of apertures
        await rt.gfree_dma(h, bufs.pop())
        bufs.append(await rt.gmalloc_dma(h, 4096))             # the aperture is reusable
        with raises_errno(errno.ENOENT):
            await rt.gfree_dma(h, np.zeros(4096, np.uint8))
    run_system(body)


def test_gref_shares_pages_until_both_sides_drop_them() -> None:
    async def body(s: rt.GdevSystem) -> None:
        m, sl = await rt.gopen(s, 0), await rt.gopen(s, 1)
        va = await rt.gmalloc(m, 3 * 4096)
        await rt.gmemcpy_to_device(m, va, b"shared!!" * 1536, 3 * 4096)
        sva = await rt.gref(m, va + 4096, 100, sl)
        out = bytearray(8)
        await rt.gmemcpy_from_device(sl, out, sva, 8)
        assert out == b"shared!!"
        await rt.gmemcpy_to_device(sl, sva, b"SLAVE", 5)        # the slave writes through
        await rt.gmemcpy_from_device(m, out, va + 4096, 8)
        assert out == b"SLAVEd!!"
        assert s.virtual[0].memory_used == 3 * 4096 and s.virtual[1].memory_used == 0
        s.check_invariants()
        await rt.gfree(m, va)                                   # pages live on for the slave
        assert s.virtual[0].memory_used == 3 * 4096
        await rt.gmemcpy_from_device(sl, out, sva, 8)
        assert out == b"SLAVEd!!"
        s.check_invariants()
        with raises_errno(errno.EINVAL):
            await rt.gfree(sl, sva)                             # a ref goes with gunref
        await rt.gunref(sl, sva)
        assert s.virtual[0].memory_used == 0
        with raises_errno(errno.ENOENT):
            await rt.gunref(sl, sva)
    run_system(body)


def test_gref_dma_and_errors() -> None:
    async def body(s: rt.GdevSystem) -> None:
        m, sl = await rt.gopen(s, 0), await rt.gopen(s, 0)
        buf = await rt.gmalloc_dma(m, 8192)
        buf.array[:] = 9
        sva = await rt.gref(m, buf.va, 8192, sl)
        out = bytearray(4)
        await rt.gmemcpy_from_device(sl, out, sva + 10, 4)     # through the slave's aperture
        assert out == b"\t" * 4
        va = await rt.gmalloc(m, 4096)
        with raises_errno(errno.ENOENT):
            await rt.gref(m, va + 4096 * 100, 1, sl)
        with raises_errno(errno.EFAULT):
            await rt.gref(m, va, 8192, sl)                      # past the object
        with raises_errno(errno.EINVAL):
            await rt.gref(m, va, 0, sl)
        with raises_errno(errno.EINVAL):
            await rt.gunref(m, va)                              # not a reference
        await rt.gclose(sl)
        with raises_errno(errno.EBADF):
            await rt.gref(m, va, 1, sl)
    run_system(body)


def test_gref_across_physical_gpus_is_refused() -> None:
    async def body(s: rt.GdevSystem) -> None:
        a, b = await rt.gopen(s, 0), await rt.gopen(s, 4)
        va = await rt.gmalloc(a, 4096)
        with raises_errno(errno.EINVAL):
            await rt.gref(a, va, 4096, b)
    run_system(body, gpus=2)


def test_vram_is_lazy() -> None:
    def rss() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        await rt.gmalloc(h, 256 * MiB)
    before = rss()
    run_system(body, memory=1 << 30, dma_memory=64 * MiB)
    assert rss() - before < 64 * MiB
