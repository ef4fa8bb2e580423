"""Device malloc/free (gdevd/gpu/heap.py, csrc/heap.h; ops_heap.py and jit/heapops.py) on both
engines: per-thread buffers, memory kept for a later kernel, NULL on exhaustion and for 0
bytes, 16-byte and __nv_aligned_device_malloc alignment, new/delete, and frees of addresses
malloc never returned, which fault naming kernel and line and leave the heap as it was."""

from __future__ import annotations

import numpy as np
import pytest

from gdevd.errors import KernelFault
from gdevd.gpu.heap import HeapAllocator

from .helpers import Device, load


@pytest.fixture
def dev():
    return Device()


def _heap(dev: Device, size: int = 1 << 20) -> HeapAllocator:
    return HeapAllocator(dev.alloc(size, 4096), size)


def test_every_thread_gets_its_own_aligned_buffer_and_frees_it(dev, engine):
    mod, heap = load("heap"), _heap(dev)
    sums, aligned = dev.alloc(4 * 256), dev.alloc(4 * 256)
    launch = dev.launch(mod, "per_thread", (4,), (64,), sums, aligned, 10, heap=heap)
    assert launch.engine == engine
    t = np.arange(256)
    assert (dev.get(sums, 256, np.int32) == t * 10000 + 45).all()
    assert (dev.get(aligned, 256, np.int32) == 1).all()
    assert heap.used == 0


def test_blocks_on_every_engine_thread_share_the_heap(dev, engine):
    mod, heap = load("heap"), _heap(dev, 64 << 10)
    slots, sums = dev.alloc(8 * 4096), dev.alloc(4 * 4096)
    dev.launch(mod, "keep", (64,), (64,), slots, 3, heap=heap)   # 4096 of 4096 granules
    ptrs = dev.get(slots, 4096, np.uint64)
    assert len(set(ptrs.tolist())) == 4096 and heap.used == heap.size
    dev.launch(mod, "use_and_free", (64,), (64,), slots, sums, 3, heap=heap)
    assert (dev.get(sums, 4096, np.int32) == 3 * np.arange(4096) + 3).all()
    assert heap.used == 0


def test_memory_survives_into_a_later_kernel_which_frees_it(dev, engine):
    mod, heap = load("heap"), _heap(dev)
    slots, sums = dev.alloc(8 * 128), dev.alloc(4 * 128)
    dev.launch(mod, "keep", (2,), (64,), slots, 7, heap=heap)
    assert heap.used == 128 * 32                 # 28 bytes: two granules each
    ptrs = dev.get(slots, 128, np.uint64)
    assert len(set(ptrs.tolist())) == 128 and (ptrs % 16 == 0).all()
    assert ((ptrs >= heap.base) & (ptrs < heap.base + heap.size)).all()
    dev.launch(mod, "use_and_free", (2,), (64,), slots, sums, 7, heap=heap)
    assert (dev.get(sums, 128, np.int32) == 7 * np.arange(128) + 21).all()
    assert heap.used == 0


def test_malloc_returns_null_when_the_heap_is_exhausted(dev, engine):
    mod, heap = load("heap"), _heap(dev, 64 << 10)
    got = dev.alloc(4 * 128)
    dev.launch(mod, "exhaust", (2,), (64,), got, 1024, heap=heap)
    assert dev.get(got, 128, np.int32).sum() == 64      # exactly what fits
    dev.launch(mod, "exhaust", (1,), (1,), got, 1 << 40, heap=heap)
    assert dev.get(got, 1, np.int32)[0] == 0


def test_malloc_of_zero_bytes_is_null_and_free_of_null_does_nothing(dev, engine):
    mod, heap = load("heap"), _heap(dev)
    out = dev.alloc(4 * 32)
    dev.launch(mod, "zero_and_null", (1,), (32,), out, heap=heap)
    assert (dev.get(out, 32, np.int32) == 1).all() and heap.used == 0


def test_without_a_heap_malloc_returns_null(dev, engine):
    mod = load("heap")
    got = dev.alloc(4 * 32)
    dev.launch(mod, "exhaust", (1,), (32,), got, 16)
    assert (dev.get(got, 32, np.int32) == 0).all()


@pytest.mark.parametrize("align", [1, 16, 64, 256, 4096])
def test_aligned_malloc_honours_the_alignment(dev, engine, align):
    mod, heap = load("heap"), _heap(dev)
    out = dev.alloc(4 * 8)
    dev.launch(mod, "aligned", (1,), (8,), out, align, heap=heap)
    assert (dev.get(out, 8, np.int32) == 1).all() and heap.used == 0


@pytest.mark.parametrize("align", [0, 3, 48, 8192])
def test_aligned_malloc_of_an_alignment_not_served_is_null(dev, engine, align):
    mod, heap = load("heap"), _heap(dev)
    out = dev.alloc(4 * 8)
    dev.launch(mod, "aligned", (1,), (8,), out, align, heap=heap)
    assert (dev.get(out, 8, np.int32) == -1).all()


def test_new_and_delete_of_a_struct_array(dev, engine):
    mod, heap = load("heap"), _heap(dev)
    out = dev.alloc(4 * 64)
    dev.launch(mod, "new_delete", (2,), (32,), out, 5, heap=heap)
    t = np.arange(64, dtype=np.float32)
    assert (dev.get(out, 64, np.float32) == 20 + 2.5 * t).all() and heap.used == 0


def test_a_double_free_faults_naming_kernel_and_line(dev, engine):
    mod, heap = load("heap"), _heap(dev)
    out = dev.alloc(4)
    with pytest.raises(KernelFault, match=r"free of an address device malloc did not return"
                                          r"\) in malloc_free_twice at line \d+"):
        dev.launch(mod, "malloc_free_twice", (1,), (1,), out, heap=heap)
    assert heap.used == 0


@pytest.mark.parametrize("offset", [16, 8, -16, 1 << 20, 1 << 30])
def test_a_hostile_free_faults_and_leaves_the_heap_whole(dev, engine, offset):
    mod, heap = load("heap"), _heap(dev)
    slots, sums = dev.alloc(8 * 32), dev.alloc(4 * 32)
    dev.launch(mod, "keep", (1,), (32,), slots, 5, heap=heap)    # 20 bytes: two granules
    first = int(dev.get(slots, 1, np.uint64)[0])
    with pytest.raises(KernelFault, match="free of an address device malloc did not return"):
        dev.launch(mod, "free_at", (1,), (1,), first, offset, heap=heap)
    dev.mmu.write(heap.base, b"\xff" * 4096)       # the kernel may scribble on the heap
    assert heap.used == 32 * 32
    dev.launch(mod, "use_and_free", (1,), (32,), slots, sums, 5, heap=heap)
    assert heap.used == 0


def test_the_allocator_is_next_fit_and_reuses_freed_granules():
    heap = HeapAllocator(1 << 32, 4096)
    a, b = heap.malloc(1), heap.malloc(17)
    assert (a, b) == (heap.base, heap.base + 16) and heap.used == 48
    assert heap.free(a) and not heap.free(a) and not heap.free(b + 16) and heap.free(0)
    assert heap.malloc(4096 - 48) == heap.base + 48       # from the rover on
    assert heap.malloc(16) == heap.base                   # then from the start
    assert heap.malloc(16) == 0 and heap.malloc(0) == 0
    assert heap.free(b) and heap.used == 4096 - 32
    assert heap.free(heap.base) and heap.free(heap.base + 48) and heap.used == 0
    assert heap.malloc(4096) == heap.base      # an empty heap starts over: one run again


def test_a_malloc_that_found_no_room_fails_larger_ones_at_once_until_a_free():
    heap = HeapAllocator(1 << 32, 64 * 16)
    blocks = [heap.malloc(16) for _ in range(64)]
    assert all(blocks) and heap.malloc(16) == 0
    assert heap.free(blocks[10]) and heap.free(blocks[12])     # two holes of one granule
    assert heap.malloc(32) == 0 and heap.malloc(48) == 0       # no run of two
    assert heap.malloc(16) == blocks[10]                       # smaller ones still search
    assert heap.free(blocks[11]) and heap.malloc(32) == blocks[11]   # a free: search again


def test_rounds_of_malloc_and_free_in_a_loop(dev, engine):
    mod, heap = load("heap"), _heap(dev, 64 << 10)
    got = dev.alloc(4 * 512)
    dev.launch(mod, "churn", (4,), (128,), got, 5, 100, heap=heap)
    assert (dev.get(got, 512, np.int32) == 5).all() and heap.used == 0
