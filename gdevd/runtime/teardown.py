"""Closing a context and giving back what it held: gclose, and the unmapping and release
steps that gfree, gunref and the shared-memory verbs share with it.

This module sits below the system (:mod:`.system` calls :func:`gclose` on the contexts still
open when it exits), so it imports the system only for type checking.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

from .handle import Handle, check_handle
from .mm.memory import DeviceBlock, MemObject
from .mm.residency import unmap_block
from .mm.swap import settle

if TYPE_CHECKING:
    from .system import GdevSystem


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
            moving = [o for o in handle.space.objects if getattr(o.block, "busy", None) is not None]
            if not moving:
                break
            await settle_object(handle, moving[0])
        release_all(handle)


def release_all(handle: Handle) -> None:
    """Drop every mapping of a (closed, drained, settled) context and its address space;
    the shared segments it created are marked for removal."""
    for obj in list(handle.space.objects):
        unmap_object(handle, obj)
    handle.vmm.reservations.clear()         # their VA goes with the address space
    for mem, ref in list(handle.vmm.allocs.items()):
        del handle.vmm.allocs[mem]
        vmm_drop(handle, ref.block)
    handle.ipc.release_all(handle.system.ipc_events)
    for seg in handle.system.shm.creator_closed(handle):
        drop_segment(handle.system, seg)
    handle.space.close()
    handle.bounce.set(0, 0)
    handle.vgpu.handles.discard(handle)
    handle.system.handles.pop(handle.cid, None)


async def settle_object(handle: Handle, obj: MemObject) -> None:
    """Wait until no swap migration moves the pages of ``obj`` (before unmapping it)."""
    if isinstance(obj.block, DeviceBlock):
        await settle(obj.block)


def unmap_object(handle: Handle, obj: MemObject) -> int:
    """Unmap ``obj`` from ``handle``; release its block when no reference is left.

    Returns the object's size.  The caller has drained the handle's stream and settled the
    block (:func:`settle_object`), and does not await in between.
    """
    block = obj.block
    if isinstance(block, DeviceBlock):
        assert block.busy is None, f"{block} is migrating"
        unmap_block(handle, obj)
    else:
        handle.mmu.unmap(obj.va, obj.size)
    handle.space.release(obj)
    block.refs -= 1
    due = handle.system.shm.detached(obj.shm, handle, obj) if obj.shm is not None else []
    export = block.shm if isinstance(block, DeviceBlock) and not obj.ref else None
    if export is not None and export.ipc:   # the owner's mapping: withdraw its CUDA IPC
        due += handle.system.shm.remove(export)     # export; the importers keep the block
    if block.refs == 0:
        release_block(handle.system, block)
    for seg in due:
        drop_segment(handle.system, seg)
    return obj.size


def vmm_drop(handle: Handle, block: DeviceBlock) -> None:
    """Drop the reference a (gone) allocation id of ``handle`` held on ``block``.  When it
    was the context's last id of a block it exported, the export is withdrawn (other
    contexts' imported ids keep the memory)."""
    block.refs -= 1
    seg = block.shm
    if seg is not None and seg.creator is handle and handle.vmm.id_of(block) is None:
        for due in handle.system.shm.remove(seg):
            drop_segment(handle.system, due)
    elif block.refs == 0:
        release_block(handle.system, block)


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
        gpu = block.vgpu.gpu
        gpu.blocks.discard(block)
        block.release(gpu.allocator, gpu.swap)
        gpu.swap.notify()
    else:
        block.release()
