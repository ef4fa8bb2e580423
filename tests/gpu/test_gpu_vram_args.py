"""Device memory is lazy and outlives no view; wrappers reject bad arguments with errnos."""

from __future__ import annotations

import errno
import gc
import os

import numpy as np
import pytest

from gdevd.errors import GdevError, MmuFault
from gdevd.gpu.mmu import ACC_READ, PAGE_SIZE, Mmu
from gdevd.gpu.vram import Vram

GiB = 1 << 30


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_vram_is_lazy() -> None:
    before = rss()
    with Vram(GiB) as vram:
        grown = rss() - before
        assert vram.size == GiB and vram.buffer.nbytes == GiB
        assert grown < 16 << 20, f"1 GiB Vram cost {grown} bytes of RSS"
        vram.buffer[::1 << 20] = 1  # touching 1024 pages costs about 4 MiB
        assert int(vram.buffer[1 << 20]) == 1 and int(vram.buffer[5]) == 0


def test_vram_views_outlive_close_safely() -> None:
    vram = Vram(4 * PAGE_SIZE)
    view = vram.buffer
    vram.close()
    vram.close()
    with pytest.raises(GdevError) as info:
        _ = vram.buffer
    assert info.value.errno == errno.EBADF
    del vram
    gc.collect()
    view[-1] = 9  # still mapped: the view holds the mapping
    assert view[-1] == 9


@pytest.mark.parametrize("size", [0, -4096, 4095, 1.5, True, "4096"])
def test_vram_bad_sizes(size) -> None:
    with pytest.raises(GdevError) as info:
        Vram(size)
    assert info.value.errno == errno.EINVAL


@pytest.fixture
def mmu() -> Mmu:
    with Mmu() as m:
        m.set_aperture(0, np.zeros(16 * PAGE_SIZE, np.uint8))
        m.map(0, 0, 8 * PAGE_SIZE)
        yield m


@pytest.mark.parametrize("call", [
    lambda m: m.map(-4096, 0, 4096),
    lambda m: m.map(1 << 64, 0, 4096),
    lambda m: m.map(8 * PAGE_SIZE, 0, 4096, aperture=64),
    lambda m: m.map(8 * PAGE_SIZE, 0, 4096, aperture=-1),
    lambda m: m.map(8 * PAGE_SIZE, 0, 4096, aperture=5),  # not registered
    lambda m: m.map(8 * PAGE_SIZE, 0, 4096, flags=8),
    lambda m: m.map(8 * PAGE_SIZE, 0, 0),
    lambda m: m.unmap(0, -1),
    lambda m: m.read(0, -1),
    lambda m: m.translate_v(np.zeros(3, np.int64)),
    lambda m: m.translate_v(np.zeros((3, 1), np.uint64)),
    lambda m: m.translate_v([0, 1]),
    lambda m: m.load_v(np.zeros(3, np.uint64), 3),
    lambda m: m.store_v(np.zeros(3, np.uint64), np.zeros(2, np.uint32)),
    lambda m: m.store_v(np.zeros(3, np.uint64), np.zeros((3, 2), np.uint32)),
    lambda m: m.store_v(np.zeros(1, np.uint64), np.zeros(1, 'V3')),
    lambda m: m.write(0, [1, 2, 3]),
    lambda m: m.read_into(0, b"immutable"),
    lambda m: m.set_aperture(0, np.zeros(PAGE_SIZE, np.uint8)),  # mapped: EBUSY
    lambda m: m.set_aperture(1, np.zeros(100, np.uint8)),
    lambda m: m.set_aperture(1, b"\0" * PAGE_SIZE),
], ids=lambda c: "")
def test_bad_mmu_arguments(mmu: Mmu, call) -> None:
    with pytest.raises(GdevError) as info:
        call(mmu)
    assert info.value.errno in (errno.EINVAL, errno.EBUSY, errno.ERANGE)
    assert not isinstance(info.value, MmuFault)
    assert mmu.mapped_pages() == 8


def test_store_float_bits_and_wide_elements(mmu: Mmu) -> None:
    vas = np.array([16, 0], np.uint64)
    mmu.store_v(vas, np.array([1.5, -2.0], np.float32))
    assert mmu.load_v(vas, 4).view(np.float32).tolist() == [1.5, -2.0]
    wide = np.array([[1, 2], [3, 4]], np.uint64)
    mmu.store_v(np.array([32, 32], np.uint64), wide)  # the later element wins
    assert mmu.load_v(np.array([32], np.uint64), 16).tolist() == [[3, 4]]


def test_write_protection_and_aperture_lifecycle(mmu: Mmu) -> None:
    mmu.map(8 * PAGE_SIZE, 8 * PAGE_SIZE, PAGE_SIZE, flags=ACC_READ)
    with pytest.raises(MmuFault) as info:
        mmu.write(8 * PAGE_SIZE - 2, b"abcd")
    assert (info.value.va, info.value.reason) == (8 * PAGE_SIZE, "protection")
    assert mmu.read(8 * PAGE_SIZE - 2, 4) == b"\0" * 4  # nothing was written
    mmu.unmap(0, 9 * PAGE_SIZE)
    mmu.set_aperture(0, None)  # no page maps it any more
    with pytest.raises(GdevError) as info2:
        mmu.map(0, 0, PAGE_SIZE)
    assert info2.value.errno == errno.EINVAL
    mmu.set_aperture(0, np.zeros(PAGE_SIZE, np.uint8))
    mmu.map(0, 0, PAGE_SIZE)
    mmu.unmap(0, PAGE_SIZE)


def test_closed_mmu_is_ebadf() -> None:
    m = Mmu()
    m.close()
    m.close()
    for call in (lambda: m.map(0, 0, 4096), lambda: m.read(0, 1),
                 lambda: m.translate_v(np.zeros(1, np.uint64))):
        with pytest.raises(GdevError) as info:
            call()
        assert info.value.errno == errno.EBADF
