"""A context's address space: its page table, its VA range, its mappings and apertures.

Theory of operation
-------------------
Each context has one :class:`AddressSpace`.  Its :class:`~gdevd.gpu.mmu.Mmu` translates the
context's GPU virtual addresses: aperture 0 is the GPU's VRAM, apertures 1..63 are pinned
host buffers (each pinned mapping takes one, given back when it is unmapped).  VAs come from
an extent allocator over Gdev's user range; :class:`~.memory.ObjectMap` finds the mapping
containing an address.

Invariant: every mapping in ``objects`` owns ``[va, va + size)`` of ``vas`` and, if pinned,
its aperture (not in ``free_apertures``); :meth:`release` gives all three back together.
"""

from __future__ import annotations

import errno

from ...errors import GdevError
from ...gpu.mmu import Mmu
from .. import defaults as D
from .allocator import ExtentAllocator
from .memory import DmaBlock, MemObject, ObjectMap


class AddressSpace:
    """One context's GPU virtual address space over ``vram`` (see the module docstring)."""

    def __init__(self, vram: object, cid: int) -> None:
        self.cid = cid                      # the owning context, for error messages
        self.mmu = Mmu()
        self.mmu.set_aperture(0, vram)
        self.vas = ExtentAllocator(D.VAS_USER_START, D.VAS_USER_END - D.VAS_USER_START,
                                   D.PAGE_SIZE)
        self.objects = ObjectMap()
        self.free_apertures = list(range(D.DMA_APERTURES, 0, -1))

    def lookup(self, va: int, size: int = 1, *, kind: int | None = None) -> MemObject:
        """The object containing ``[va, va + size)``.

        ``GdevError(ENOENT)`` if no object of this context (of ``kind``, if given) contains
        ``va``; ``GdevError(EFAULT)`` if the range runs past the object's end.
        """
        if isinstance(va, bool) or not isinstance(va, int):
            raise GdevError(errno.EINVAL, f"address must be an integer: {va!r}")
        obj = self.objects.find(va)
        if obj is None or (kind is not None and obj.kind != kind):
            raise GdevError(errno.ENOENT, f"no object at {va:#x} in context {self.cid}")
        if not obj.covers(va, size) and (obj.vmm is None or kind is not None):
            raise GdevError(errno.EFAULT, f"{va:#x}+{size:#x} runs past the end of {obj}")
        if not obj.covers(va, size):
            self.spans(va, size)            # gvm_map mappings end to end may carry it on
        return obj

    def spans(self, va: int, size: int) -> list[tuple[MemObject, int, int]]:
        """``[va, va + size)`` as pieces ``(mapping, va, size)`` in address order: one, or
        several ``gvm_map`` mappings that follow each other without a hole (one buffer made
        of several allocations, as CUDA allows).  ENOENT / EFAULT as :meth:`lookup`."""
        out: list[tuple[MemObject, int, int]] = []
        obj = self.lookup(va)
        while True:
            n = min(size, obj.va + obj.size - va)
            out.append((obj, va, n))
            va, size = va + n, size - n
            if not size:
                return out
            nxt = self.objects.find(va) if obj.vmm is not None else None
            if nxt is None or nxt.vmm is None:
                raise GdevError(errno.EFAULT, f"{va:#x}+{size:#x} runs past the end of {obj}")
            obj = nxt

    def alloc_va(self, size: int) -> int:
        """A free VA range of ``size`` bytes (ENOMEM when the space is full)."""
        [(va, _)] = self.vas.alloc(size)
        return va

    def map_pinned(self, block: DmaBlock, *, ref: bool) -> MemObject:
        """Map pinned ``block`` through a free aperture at a new VA; its mapping.

        ENOMEM when every aperture is taken; nothing changes on any error."""
        if not self.free_apertures:
            raise GdevError(errno.ENOMEM, f"context {self.cid}: no aperture left for "
                                          "pinned memory")
        aperture = self.free_apertures.pop()
        try:
            self.mmu.set_aperture(aperture, block.array)
            va = self.alloc_va(block.size)
            try:
                self.mmu.map(va, 0, block.size, aperture=aperture)
            except BaseException:
                self.vas.free([(va, block.size)])
                raise
        except BaseException:
            self.free_apertures.append(aperture)
            raise
        obj = MemObject(va, block, ref=ref, aperture=aperture)
        self.objects.add(obj)
        return obj

    def release(self, obj: MemObject) -> None:
        """Forget mapping ``obj`` (its pages already unmapped): its VA range and aperture
        go back; the block's reference is the caller's to drop."""
        self.objects.remove(obj)
        if obj.vmm is None:                 # a gvm_map mapping's VA is its reservation's
            self.vas.free([(obj.va, obj.size)])
        if obj.aperture:
            self.mmu.set_aperture(obj.aperture, None)
            self.free_apertures.append(obj.aperture)

    def close(self) -> None:
        """Release the page table (every mapping released before)."""
        self.mmu.close()
