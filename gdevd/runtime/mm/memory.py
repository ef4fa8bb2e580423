"""Memory objects: device pages, pinned host (DMA) buffers, and their mappings in contexts.

Theory of operation
-------------------
Physical memory is a *block*: a :class:`DeviceBlock` (extents of one GPU's VRAM, from that
GPU's :class:`~.allocator.ExtentAllocator`) or a :class:`DmaBlock` (a memfd mapped
``MAP_SHARED``: the daemon can hand the fd to a client process, which maps the same pages;
the memfd is sealed against resizing, so the client cannot pull pages from under the daemon).
A block is charged to the vGPU that allocated it, once, whoever else maps it later.

A context sees blocks through :class:`MemObject` mappings in its address space: the owner's
mapping from ``gmalloc``/``gmalloc_dma`` and any ``gref`` mappings of other contexts.  Each
mapping holds one reference; the block is released (pages scrubbed and returned, the vGPU
uncharged, the fd closed) when the last reference goes.  So a master may ``gfree`` an object
a slave still references: the pages live on until the slave's ``gunref`` or ``gclose``.

:class:`ObjectMap` finds the object containing an address (Gdev's lookup is containment, not
equality) by bisection over the sorted start addresses.
"""

from __future__ import annotations

import bisect
import errno
import mmap
import os
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import GdevError
from ...gpu.hostpages import sealed_memfd
from ..constants import GDEV_MEM_DEVICE, GDEV_MEM_DMA
from ..defaults import PAGE_SIZE as PAGE
from .allocator import Extent

PROT_RW = 3  # the MMU's read | write flags (CUDA's CU_MEM_ACCESS_FLAGS_PROT_READWRITE)

if TYPE_CHECKING:
    from ...gpu.device import PhysicalGpu
    from ..system import VirtualGpu


class DeviceBlock:
    """Device pages on one GPU, ``size`` bytes, tracked page by page (see docs/memory.md).

    Page ``i`` is *resident* at VRAM address ``pa[i]`` (>= 0), or evicted: to the device
    swap area at ``sw[i]`` (>= 0), else to ``host`` (the block's host swap copy, page ``i``
    at byte ``i * PAGE``).  Only resident bytes are charged to ``vgpu.memory_used``; the
    swap module keeps the swapped ones in its counters.  ``pins`` counts operations that
    need the block resident (never a victim then), ``running`` those of them past their
    swap-in; ``busy`` is an event while a migration moves its pages.  ``maps`` lists every
    (context, mapping) of the block, so swapping can unmap and remap all of them.
    """

    kind = GDEV_MEM_DEVICE

    def __init__(self, gpu: PhysicalGpu, vgpu: VirtualGpu, extents: list[Extent],
                 owner: Any = None) -> None:
        self.gpu, self.vgpu, self.owner = gpu, vgpu, owner
        self.size = sum(length for _, length in extents)
        self.pa = np.concatenate([np.arange(pa, pa + length, PAGE, dtype=np.int64)
                                  for pa, length in extents]) if extents else \
            np.empty(0, np.int64)
        self.sw = np.full(len(self.pa), -1, np.int64)
        self.host: np.ndarray | None = None
        self.refs = self.pins = self.running = 0
        self.busy: Any = None
        self.maps: list[tuple[Any, MemObject]] = []
        self.shm: Any = None
        vgpu.memory_used += self.size

    @property
    def npages(self) -> int:
        """The block's length in pages."""
        return len(self.pa)

    @property
    def resident_bytes(self) -> int:
        """Bytes of the block now in VRAM (what its vGPU is charged)."""
        return int(np.count_nonzero(self.pa >= 0)) * PAGE

    def runs(self, resident: bool = True) -> list[tuple[int, int, int]]:
        """Maximal runs ``(first page, pa, pages)`` of resident, physically contiguous pages.

        With ``resident=False``: runs ``(first page, -1, pages)`` of non-resident pages.
        """
        idx = np.nonzero((self.pa >= 0) == resident)[0]
        if not len(idx):
            return []
        brk = np.diff(idx) != 1
        if resident:
            brk |= np.diff(self.pa[idx]) != PAGE
        starts = np.concatenate(([0], np.nonzero(brk)[0] + 1))
        ends = np.concatenate((starts[1:], [len(idx)]))
        return [(int(idx[s]), int(self.pa[idx[s]]) if resident else -1, int(e - s))
                for s, e in zip(starts, ends, strict=True)]

    @property
    def extents(self) -> list[Extent]:
        """The resident pages as VRAM extents ``(pa, length)`` in block order."""
        return [(pa, n * PAGE) for _, pa, n in self.runs()]

    def release(self, allocator: Any, swap: Any = None) -> None:
        """Scrub the resident pages and give them back to ``allocator``; drop the swapped
        ones from ``swap`` (the GPU's swap area); uncharge the vGPU."""
        extents = self.extents
        for pa, length in extents:
            self.gpu.scrub(pa, length)
        allocator.free(extents)
        self.vgpu.memory_used -= sum(length for _, length in extents)
        if swap is not None:
            swap.forget(self)
        self.pa = np.full(len(self.pa), -1, np.int64)
        self.host = None


class DmaBlock:
    """Pinned host memory: a ``size``-byte memfd, mapped shared; ``array`` is its bytes."""

    kind = GDEV_MEM_DMA

    def __init__(self, vgpu: VirtualGpu, size: int) -> None:
        self.fd = sealed_memfd("gdev-dma", size)  # a client can never resize it under us
        try:
            self.map = mmap.mmap(self.fd, size, mmap.MAP_SHARED,
                                 mmap.PROT_READ | mmap.PROT_WRITE)
        except OSError as e:
            os.close(self.fd)
            raise GdevError(errno.ENOMEM, f"pinned buffer of {size} bytes: {e}") from e
        self.array = np.frombuffer(self.map, dtype=np.uint8)
        self.size, self.vgpu, self.refs = size, vgpu, 0
        self.address = self.array.ctypes.data
        vgpu.dma_used += size

    def release(self, allocator: Any = None) -> None:
        """Close the fd and uncharge the vGPU.

        The mapping itself goes when the last Python view of it does (closing it under a
        live numpy view would leave that view pointing at unmapped memory).
        """
        os.close(self.fd)
        self.fd = -1
        self.vgpu.dma_used -= self.size
        self.array = None  # type: ignore[assignment]
        self.map = None  # type: ignore[assignment]

    def contains(self, address: int, size: int) -> bool:
        """True if host ``[address, address + size)`` lies inside this buffer."""
        return self.address <= address and address + size <= self.address + self.size


Block = DeviceBlock | DmaBlock


class MemObject:
    """One mapping of a block in a context: ``[va, va + size)``; ``ref`` if made by gref.

    A mapping shows bytes ``[offset, offset + size)`` of its block (the whole block but for
    a ``gvm_map`` of a part) with MMU access ``prot`` (read 1, read-write 3; 0: nothing is
    mapped, every access faults).  ``vmm`` is the reservation a ``gvm_map`` mapping lies in:
    its VA range belongs to the reservation, not to the context's VA allocator.
    """

    def __init__(self, va: int, block: Block, *, ref: bool = False, aperture: int = 0,
                 offset: int = 0, size: int | None = None, prot: int = PROT_RW) -> None:
        self.va, self.block, self.ref, self.aperture = va, block, ref, aperture
        self.offset = offset                # page aligned; 0 unless made by gvm_map
        self.size = block.size - offset if size is None else size
        self.prot = prot
        self.shm: Any = None                # the shared segment, for a gshmat mapping
        self.vmm: Any = None                # the reservation, for a gvm_map mapping
        block.refs += 1

    @property
    def kind(self) -> int:
        """GDEV_MEM_DEVICE or GDEV_MEM_DMA."""
        return self.block.kind

    @property
    def pages(self) -> tuple[int, int]:
        """The block's pages ``[first, end)`` this mapping shows."""
        return self.offset // PAGE, (self.offset + self.size) // PAGE

    def run_va(self, page: int, n: int) -> tuple[int, int, int] | None:
        """Where block pages ``[page, page + n)`` appear in this mapping: ``(va, first page,
        count)`` of the part inside it, or None if no part is (or nothing is mapped)."""
        lo, hi = self.pages
        first, end = max(page, lo), min(page + n, hi)
        if first >= end or not self.prot:
            return None
        return self.va + (first - lo) * PAGE, first, end - first

    def covers(self, va: int, size: int) -> bool:
        """True if ``[va, va + size)`` lies inside this mapping."""
        return self.va <= va and va + size <= self.va + self.size

    def __repr__(self) -> str:
        kind = "dma" if self.kind == GDEV_MEM_DMA else "dev"
        return f"<MemObject {kind} {self.va:#x}+{self.size:#x}{' ref' if self.ref else ''}>"


class ObjectMap:
    """The mappings of one context, keyed by start address, found by containment."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._objs: dict[int, MemObject] = {}
        self.pinned: list[MemObject] = []     # the DMA mappings
        # id(block.array) -> the first pinned mapping of that block: a host array is known
        # as pinned by what owns its bytes, never by searching addresses (mm/hostmem.py).
        # Invariant: the keys are exactly the arrays of the blocks of ``pinned``.
        self._by_array: dict[int, MemObject] = {}

    def add(self, obj: MemObject) -> None:
        """Insert a mapping (the caller guarantees it overlaps no other)."""
        bisect.insort(self._starts, obj.va)
        self._objs[obj.va] = obj
        if isinstance(obj.block, DmaBlock):
            self.pinned.append(obj)
            self._by_array.setdefault(id(obj.block.array), obj)

    def remove(self, obj: MemObject) -> None:
        """Remove a mapping previously added."""
        del self._objs[obj.va]
        self._starts.pop(bisect.bisect_left(self._starts, obj.va))
        if isinstance(obj.block, DmaBlock):
            self.pinned.remove(obj)
            key = id(obj.block.array)
            if self._by_array.get(key) is obj:
                del self._by_array[key]
                other = next((o for o in self.pinned if o.block is obj.block), None)
                if other is not None:
                    self._by_array[key] = other

    def pinned_owning(self, array: object) -> MemObject | None:
        """The pinned mapping whose block's array is ``array`` (that very object), or None."""
        return self._by_array.get(id(array))

    def find(self, va: int) -> MemObject | None:
        """The mapping containing ``va``, or None."""
        i = bisect.bisect_right(self._starts, va) - 1
        if i < 0:
            return None
        obj = self._objs[self._starts[i]]
        return obj if va < obj.va + obj.size else None

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter([self._objs[va] for va in self._starts])

    def __len__(self) -> int:
        return len(self._starts)


class DmaBuffer:
    """A pinned host buffer as ``gmalloc_dma`` returns it.

    ``array`` is an np.uint8 view of the shared mapping (``np.asarray(buf)`` works too),
    ``va`` its address in the context's unified GPU address space (``gvirtget``), ``fd`` the
    memfd behind it (for passing to another process), ``size`` its length in bytes.
    """

    def __init__(self, obj: MemObject) -> None:
        block = obj.block
        assert isinstance(block, DmaBlock)
        self.mapping = obj                  # its mapping in the allocating context
        self.array: np.ndarray = block.array
        self.va, self.size = obj.va, block.size

    @property
    def fd(self) -> int:
        """The memfd of the buffer (-1 once freed)."""
        block = self.mapping.block
        assert isinstance(block, DmaBlock)
        return block.fd

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self.array if dtype is None else self.array.astype(dtype, copy=False)

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        return f"<DmaBuffer va={self.va:#x} size={self.size}>"
