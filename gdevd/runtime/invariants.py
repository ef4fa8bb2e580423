"""The memory manager's invariant checker (``GdevSystem.check_invariants``), s3ql-fsck style.

Checked: every allocator is internally consistent; the device pages in use are exactly the
pages of the live blocks (no leak, no overlap); each vGPU's charge equals the sizes of the
blocks charged to it; each block's reference count equals its mappings; each context's
mappings are disjoint, inside its VA allocator's used space, and translate through its MMU
to the block's pages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .memory import DeviceBlock, DmaBlock, MemObject

if TYPE_CHECKING:
    from .handle import Handle
    from .system import GdevSystem


def check_system(system: GdevSystem) -> None:
    """Assert every invariant above; raises AssertionError naming the first broken one."""
    blocks: dict[int, tuple[DeviceBlock | DmaBlock, list[MemObject]]] = {}
    for handle in system.handles.values():
        assert not handle.closed, f"closed {handle} still registered"
        for obj in _check_handle(handle):
            blocks.setdefault(id(obj.block), (obj.block, []))[1].append(obj)
    for block, objs in blocks.values():
        assert block.refs == len(objs), f"block refs {block.refs} != {len(objs)} mappings"
    for vgpu in system.virtual:
        dev = sum(b.size for b, _ in blocks.values()
                  if isinstance(b, DeviceBlock) and b.vgpu is vgpu)
        dma = sum(b.size for b, _ in blocks.values() if isinstance(b, DmaBlock) and b.vgpu is vgpu)
        assert vgpu.memory_used == dev, f"vGPU {vgpu.minor}: charged {vgpu.memory_used} != {dev}"
        assert vgpu.dma_used == dma, f"vGPU {vgpu.minor}: pinned {vgpu.dma_used} != {dma}"
        for handle in vgpu.handles:
            assert system.handles.get(handle.cid) is handle, f"{handle} not in the system"
    for gpu in system.physical:
        _check_pages(system, gpu.index, [b for b, _ in blocks.values()
                                         if isinstance(b, DeviceBlock) and b.gpu is gpu])


def _check_pages(system: GdevSystem, index: int, blocks: list[DeviceBlock]) -> None:
    allocator = system.allocators[index]
    allocator.check()
    used = sorted(e for b in blocks for e in b.extents)
    assert sum(length for _, length in used) == allocator.used_bytes, \
        f"gpu{index}: {allocator.used_bytes} bytes allocated, live blocks hold " \
        f"{sum(length for _, length in used)} (leak)"
    free = allocator.free_extents()
    ranges = sorted(used + free)
    pos = allocator.base
    for start, length in ranges:
        assert start == pos, f"gpu{index}: pages at {pos:#x} double-owned or lost"
        pos = start + length
    assert pos == allocator.base + allocator.size, f"gpu{index}: pages lost at the top"


def _check_handle(handle: Handle) -> list[MemObject]:
    objs = list(handle.objects)
    end = 0
    for obj in objs:
        assert obj.va >= end, f"{handle}: mappings overlap at {obj.va:#x}"
        end = obj.va + obj.size
        _check_translation(handle, obj)
    assert handle.vas.used_bytes == sum(o.size for o in objs), f"{handle}: VA space leak"
    handle.vas.check()
    assert len(handle.objects.pinned) == sum(isinstance(o.block, DmaBlock) for o in objs)
    return objs


def _check_translation(handle: Handle, obj: MemObject) -> None:
    block = obj.block
    if isinstance(block, DmaBlock):
        assert handle.mmu.translate(obj.va) == (obj.aperture, 0), f"{obj}: bad translation"
        return
    off = 0
    for pa, length in block.extents:
        for va, want in ((obj.va + off, pa), (obj.va + off + length - 1, pa + length - 1)):
            assert handle.mmu.translate(va) == (0, want), f"{obj}: {va:#x} mistranslated"
        off += length
