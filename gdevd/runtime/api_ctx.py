"""Gdev verbs for contexts: gopen, gclose, gquery, gtune, gdevice_count.

Every verb is ``async``, owned by the system's trio loop, takes the handle first (except
``gopen``/``gdevice_count``, which take the system) and raises :class:`GdevError` with an
errno on failure; nothing returns 0/None for failure.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from typing import Any

import trio

from ..errors import GdevError
from . import constants as C
from . import defaults as D
from .config import check_chunk_size, check_pipeline_count
from .handle import Handle, check_handle
from .limits import check_gopen
from .memory import DeviceBlock, MemObject
from .system import Credentials, GdevSystem


async def gopen(system: GdevSystem, minor: int, cred: Credentials | None = None) -> Handle:
    """Open a context on virtual GPU ``minor`` (Gdev's ``gopen``).

    Errors: ENODEV (no such vGPU or the system is shut down), EBUSY (the physical GPU already
    has ``contexts_max`` contexts, or a non-root opener is over its limits: :mod:`.limits`).
    """
    await trio.lowlevel.checkpoint()
    if system.nursery is None or not system.physical:
        raise GdevError(errno.ENODEV, "the system is not running")
    vgpu = system.vgpu(minor)
    cred = cred or Credentials.current()
    check_gopen(system, vgpu, cred)
    handle = Handle(system, vgpu, cred)
    system.handles[handle.cid] = handle
    vgpu.handles.add(handle)
    system.policy.entity(handle)    # the guest class is the opener's policy at the open
    return handle


async def gclose(handle: Handle) -> None:
    """Close a context: cancel its launches, wait for its copies, free everything it held.

    Errors: EBADF if it was closed already.  Cancellation-safe: the teardown is shielded.
    """
    check_handle(handle)
    handle.closed = True
    handle.cancel_pending()
    with trio.CancelScope(shield=True):
        await handle.drain()
        while True:     # settle every block, with no await between the last check and release
            moving = [o for o in handle.objects if getattr(o.block, "busy", None) is not None]
            if not moving:
                break
            await settle_object(handle, moving[0])
        release_all(handle)


def release_all(handle: Handle) -> None:
    """Drop every mapping of a (closed, drained, settled) context and its address space;
    the shared segments it created are marked for removal."""
    for obj in list(handle.objects):
        unmap_object(handle, obj)
    for seg in handle.system.shm.creator_closed(handle):
        drop_segment(handle.system, seg)
    handle.mmu.close()
    handle.set_bounce(0, 0)
    handle.vgpu.handles.discard(handle)
    handle.system.handles.pop(handle.cid, None)


async def settle_object(handle: Handle, obj: MemObject) -> None:
    """Wait until no swap migration moves the pages of ``obj`` (before unmapping it)."""
    from .swap import settle
    if isinstance(obj.block, DeviceBlock):
        await settle(obj.block)


def unmap_object(handle: Handle, obj: MemObject) -> int:
    """Unmap ``obj`` from ``handle``; release its block when no reference is left.

    Returns the object's size.  The caller has drained the handle's stream and settled the
    block (:func:`settle_object`), and does not await in between.
    """
    block = obj.block
    if isinstance(block, DeviceBlock):
        from .residency import unmap_block
        assert block.busy is None, f"{block} is migrating"
        unmap_block(handle, obj)
    else:
        handle.mmu.unmap(obj.va, obj.size)
    handle.objects.remove(obj)
    handle.vas.free([(obj.va, obj.size)])
    if obj.aperture:
        handle.mmu.set_aperture(obj.aperture, None)
        handle.free_apertures.append(obj.aperture)
    block.refs -= 1
    due = handle.system.shm.detached(obj.shm, handle, obj) if obj.shm is not None else []
    if block.refs == 0:
        release_block(handle.system, block)
    for seg in due:
        drop_segment(handle.system, seg)
    return obj.size


def drop_segment(system: GdevSystem, seg: Any) -> None:
    """Drop the segment table's reference on a destroyed segment's block."""
    block = seg.block
    block.refs -= 1
    block.shm = None
    if block.refs == 0:
        release_block(system, block)


def release_block(system: GdevSystem, block: Any) -> None:
    """Give a block with no reference left back: VRAM, swap, charge (device) or fd (DMA)."""
    if isinstance(block, DeviceBlock):
        index = block.gpu.index
        system.blocks[index].discard(block)
        block.release(system.allocators[index], system.swap[index])
        system.swap[index].notify()
    else:
        block.release()


_QUERIES: dict[int, Callable[[Handle], int]] = {
    C.GDEV_QUERY_DEVICE_MEM_SIZE: lambda h: h.vgpu.memory_size,
    C.GDEV_QUERY_DMA_MEM_SIZE: lambda h: h.vgpu.dma_memory_size,
    C.GDEV_QUERY_CHIPSET: lambda h: D.CHIPSET,
    C.GDEV_QUERY_BUS_TYPE: lambda h: D.BUS_TYPE,
    C.GDEV_QUERY_AGP_SIZE: lambda h: D.AGP_SIZE,
    C.GDEV_QUERY_PCI_VENDOR: lambda h: D.PCI_VENDOR,
    C.GDEV_QUERY_PCI_DEVICE: lambda h: D.PCI_DEVICE,
    C.GDEV_NVIDIA_QUERY_MP_COUNT: lambda h: h.phys.mp_count,
    C.GDEV_QUERY_DEVICE_MEM_FREE: lambda h: max(0, h.vgpu.memory_size - h.vgpu.memory_used),
    C.GDEV_QUERY_DEVICE_MEM_USED: lambda h: h.vgpu.memory_used,
    C.GDEV_QUERY_COMPUTE_CAPABILITY:
        lambda h: (h.phys.compute_capability[0] << 16) | h.phys.compute_capability[1],
    C.GDEV_QUERY_DMA_MEM_FREE: lambda h: max(0, h.vgpu.dma_memory_size - h.vgpu.dma_used),
}
assert set(_QUERIES) == C.QUERY_TYPES


async def gquery(handle: Handle, qtype: int) -> int:
    """Gdev's ``gquery``: the value of query ``qtype`` (``GDEV_QUERY_*`` in constants).

    Errors: EBADF (closed handle), EINVAL (unknown type).
    """
    await trio.lowlevel.checkpoint()
    return query(handle, qtype)


def query(handle: Handle, qtype: int) -> int:
    """:func:`gquery` without its checkpoint, for a caller that checkpoints on its own (the
    ioctl server's loop): reads state, never blocks.  Same value and errors."""
    check_handle(handle)
    query = _QUERIES.get(qtype) if type(qtype) is int else None
    if query is None:
        raise GdevError(errno.EINVAL, f"unknown query type {qtype!r}")
    return int(query(handle))


async def gtune(handle: Handle, ttype: int, value: int) -> None:
    """Gdev's ``gtune``: set the handle's memcpy chunk size or pipeline count.

    ``GDEV_TUNE_MEMCPY_CHUNK_SIZE``: 4 KiB..32 MiB, a page multiple.
    ``GDEV_TUNE_MEMCPY_PIPELINE_COUNT``: 1..4.  The bounce buffers are reallocated once
    earlier copies are done.  Errors: EBADF, EINVAL (unknown type or out-of-range value;
    nothing changes then).
    """
    check_handle(handle)
    chunk, depth = handle.chunk_size, handle.pipeline_count
    if ttype == C.GDEV_TUNE_MEMCPY_CHUNK_SIZE:
        check_chunk_size(value)
        chunk = value
    elif ttype == C.GDEV_TUNE_MEMCPY_PIPELINE_COUNT:
        check_pipeline_count(value)
        depth = value
    else:
        raise GdevError(errno.EINVAL, f"unknown tune type {ttype!r}")
    async with handle.exclusive():
        handle.check_open()
        handle.set_bounce(chunk, depth)


async def gdevice_count(system: GdevSystem) -> int:
    """Gdev's ``gdevice_count``: the number of virtual GPUs (``/dev/gdevN`` files)."""
    await trio.lowlevel.checkpoint()
    return len(system.virtual)
