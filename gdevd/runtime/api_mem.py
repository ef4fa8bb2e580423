"""Gdev verbs for memory: gmalloc, gfree, gmalloc_dma, gfree_dma, gref, gunref, gvirtget.

Sizes are rounded up to whole 4 KiB pages and charged to the context's vGPU against its
share (``memory_size``; pinned memory against ``dma_memory_size``).  Verbs that unmap wait
for the context's earlier copies and launches first (like ``cuMemFree``), so an engine never
touches a page after it was given back.
"""

from __future__ import annotations

import errno
from typing import Any

import numpy as np
import trio

from ..errors import GdevError
from . import defaults as D
from .constants import GDEV_MEM_DEVICE
from .handle import Handle, check_handle
from .limits import check_pinned
from .mm.hostmem import offset_in, pinned_holding
from .mm.memory import DeviceBlock, DmaBlock, DmaBuffer, MemObject
from .mm.residency import map_block
from .mm.swap import alloc_pages, settle
from .teardown import release_block, settle_object, unmap_object


def check_size(size: object) -> int:
    """``size`` as a positive int, else ``GdevError(EINVAL)``."""
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
        raise GdevError(errno.EINVAL, f"size must be a positive integer: {size!r}")
    return size


def _pages(size: int) -> int:
    return -(-size // D.PAGE_SIZE) * D.PAGE_SIZE


async def new_block(handle: Handle, size: int) -> DeviceBlock:
    """A device block of ``size`` (page-rounded) bytes charged to ``handle``'s vGPU.

    When the share or the device is full, victims are swapped out (:mod:`.mm.swap`); ENOMEM
    when neither memory nor swap can make room.
    """
    need = _pages(check_size(size))
    extents = await alloc_pages(handle, handle.vgpu, need)
    block = DeviceBlock(handle.phys, handle.vgpu, extents, owner=handle)
    handle.gpu.blocks.add(block)
    return block


def map_new(handle: Handle, block: DeviceBlock, *, ref: bool) -> MemObject:
    """Map ``block`` (settled) at a new VA of ``handle``; return the mapping."""
    va = handle.space.alloc_va(block.size)
    obj = MemObject(va, block, ref=ref)
    try:
        map_block(handle, obj)
    except BaseException:
        block.refs -= 1
        handle.space.vas.free([(va, block.size)])
        raise
    return obj


async def gmalloc(handle: Handle, size: int) -> int:
    """Allocate ``size`` bytes of device memory; return its GPU virtual address.

    Errors: EBADF, EINVAL (size <= 0), ENOMEM (beyond the vGPU's share or the device, and
    nothing can be swapped out to make room; or the address space is full), the sticky
    error of a context whose kernel faulted (every later call fails, as in CUDA).
    """
    await trio.lowlevel.checkpoint()
    check_handle(handle)
    handle.check_kernel_fault()
    block = await new_block(handle, size)
    try:
        handle.check_open()
        return map_new(handle, block, ref=False).va
    except BaseException:
        if block.refs == 0:
            release_block(handle.system, block)
        raise


async def gfree(handle: Handle, addr: int) -> int:
    """Free the device object containing ``addr``; return its size in bytes.

    Errors: EBADF, ENOENT (no device object there: unknown address, another context's
    address, or a double free), EINVAL (a ``gref`` mapping: use ``gunref``; the device heap,
    heap.py), the sticky
    error of a context whose kernel faulted (its memory goes with the context).
    """
    check_handle(handle)
    handle.check_kernel_fault()
    async with handle.exclusive():
        handle.check_open()
        obj = handle.lookup(addr, kind=GDEV_MEM_DEVICE)
        if obj.ref or obj.vmm is not None:
            raise GdevError(errno.EINVAL, f"{obj} is a reference or a gvm_map mapping: "
                                          "gunref or gvm_unmap it")
        if handle.heap is not None and obj.va == handle.heap.base:
            raise GdevError(errno.EINVAL, f"{obj} is the device heap of malloc in kernels: "
                                          "it is freed with the context")
        await settle_object(handle, obj)
        return unmap_object(handle, obj)


async def gmalloc_dma(handle: Handle, size: int, *, guaranteed: bool = False) -> DmaBuffer:
    """Allocate ``size`` bytes of pinned host memory mapped into the context's address space.

    Returns a :class:`DmaBuffer` (``.array`` its bytes, ``.va`` its GPU address, ``.fd`` its
    memfd).  ``guaranteed`` is for the daemon's smallest staging buffer of a context: it is
    granted beyond the vGPU's DMA share, so that no tenant pinning the whole share can stop
    another's pageable copies.  Errors: EBADF, EINVAL, ENOMEM (beyond the vGPU's DMA share,
    beyond the context's ``pinned_per_session``, or more than 63 pinned buffers in one
    context).
    """
    await trio.lowlevel.checkpoint()
    check_handle(handle)
    need = _pages(check_size(size))
    vgpu = handle.vgpu
    check_pinned(handle, need)
    if not guaranteed and vgpu.dma_used + need > vgpu.dma_memory_size:
        raise GdevError(errno.ENOMEM, f"vGPU {vgpu.minor}: {need} pinned bytes exceed its share "
                                      f"({vgpu.dma_used}/{vgpu.dma_memory_size} used)")
    if not handle.space.free_apertures:
        raise GdevError(errno.ENOMEM, f"context {handle.cid}: no aperture left for pinned memory")
    block = DmaBlock(vgpu, need)
    try:
        obj = handle.space.map_pinned(block, ref=False)
    except BaseException:
        block.release()
        raise
    return DmaBuffer(obj)


def pinned_object(handle: Handle, buf: Any) -> MemObject:
    """The pinned object of ``handle`` that ``buf`` (a DmaBuffer or a view of one) lies in.

    ``GdevError(ENOENT)`` if ``buf`` is not inside a pinned buffer of this context.
    """
    obj = pinned_holding(handle.space.objects, buf)
    if obj is None:
        raise GdevError(errno.ENOENT, f"{buf!r:.60} is not a pinned buffer of context "
                                      f"{handle.cid}")
    return obj


async def gfree_dma(handle: Handle, buf: DmaBuffer) -> int:
    """Free a pinned buffer returned by ``gmalloc_dma``; return its size.

    Errors: EBADF, ENOENT (not a pinned buffer of this context, or already freed), EINVAL
    (a ``gref`` mapping).
    """
    check_handle(handle)
    async with handle.exclusive():
        handle.check_open()
        obj = pinned_object(handle, buf)
        if obj.ref:
            raise GdevError(errno.EINVAL, f"{obj} is a reference: gunref it")
        return unmap_object(handle, obj)


async def gref(master: Handle, addr: int, size: int, slave: Handle) -> int:
    """Map the object of ``master`` containing ``[addr, addr + size)`` into ``slave``.

    The same physical pages (device or pinned) appear in the slave's address space; the
    return value is the slave-side address of ``addr``.  The pages stay alive until both
    sides dropped them.  Errors: EBADF (either closed), ENOENT (no object at ``addr`` in the
    master), EFAULT (range past the object), EINVAL (size <= 0, or the contexts are on
    different physical GPUs).
    """
    await trio.lowlevel.checkpoint()
    check_handle(master)
    check_handle(slave)
    check_size(size)
    if master.phys is not slave.phys:
        raise GdevError(errno.EINVAL, "gref between contexts of different physical GPUs")
    obj = master.lookup(addr, size)
    block = obj.block
    if isinstance(block, DmaBlock):
        new = slave.space.map_pinned(block, ref=True)
    else:
        await settle(block)
        check_handle(master)
        check_handle(slave)
        if obj.block is not block or master.space.objects.find(obj.va) is not obj:
            raise GdevError(errno.ENOENT, f"{obj} was freed meanwhile")
        new = map_new(slave, block, ref=True)
    return new.va + obj.offset + (addr - obj.va)


async def gunref(handle: Handle, addr: int) -> None:
    """Drop the ``gref`` mapping containing ``addr`` from ``handle``.

    Errors: EBADF, ENOENT (nothing there), EINVAL (an object the context allocated itself).
    """
    check_handle(handle)
    async with handle.exclusive():
        handle.check_open()
        obj = handle.lookup(addr)
        if not obj.ref or obj.shm is not None or obj.vmm is not None:
            raise GdevError(errno.EINVAL, f"{obj} is not a gref mapping")
        await settle_object(handle, obj)
        unmap_object(handle, obj)


async def gvirtget(handle: Handle, buf: Any) -> int:
    """The unified GPU virtual address of host memory ``buf`` inside a pinned buffer.

    ``buf`` is a DmaBuffer or a numpy view/slice of one.  Errors: EBADF, EINVAL (not inside
    a pinned buffer of this context).
    """
    await trio.lowlevel.checkpoint()
    check_handle(handle)
    try:
        obj = pinned_object(handle, buf)
    except GdevError as e:
        raise GdevError(errno.EINVAL, e.detail) from None
    if isinstance(buf, DmaBuffer):
        return obj.va
    return obj.va + offset_in(obj, np.asarray(buf))
