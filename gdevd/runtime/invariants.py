"""The memory manager's invariant checker (``GdevSystem.check_invariants``), s3ql-fsck style.

Checked: every allocator is internally consistent; the device pages in use are exactly the
pages of the live blocks (no leak, no overlap); each vGPU's charge equals the sizes of the
blocks charged to it; each block's reference count equals its mappings; each context's
mappings are disjoint, inside its VA allocator's used space, and translate through its MMU
to the block's resident pages, and evicted pages translate nowhere; the swap area's pages
and the host swap budget equal what the blocks hold there; the swapped-bytes counters equal
the blocks' non-resident bytes; nothing is pinned or migrating at rest; every shared segment
is held by the table and its attachments; every CUDA IPC open names an IPC mapping of its
context, and every interprocess event's references are its holders' (``ipc.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import MmuFault
from .defaults import PAGE_SIZE as PAGE
from .mm.memory import DeviceBlock, DmaBlock, MemObject

if TYPE_CHECKING:
    from .handle import Handle
    from .pergpu import Gpu
    from .system import GdevSystem, VirtualGpu


def check_system(system: GdevSystem) -> None:
    """Assert every invariant above; raises AssertionError naming the first broken one."""
    blocks: dict[int, tuple[DeviceBlock | DmaBlock, list[MemObject]]] = {}
    ids: dict[int, int] = {}                # block -> allocation ids holding it (mm/vmm.py)
    for handle in system.handles.values():
        assert not handle.closed, f"closed {handle} still registered"
        for obj in _check_handle(handle):
            blocks.setdefault(id(obj.block), (obj.block, []))[1].append(obj)
        for ref in handle.vmm.allocs.values():
            assert ref.refs > 0, f"{handle}: a dead allocation id"
            blocks.setdefault(id(ref.block), (ref.block, []))
            ids[id(ref.block)] = ids.get(id(ref.block), 0) + 1
    for seg in system.shm.segments.values():
        blocks.setdefault(id(seg.block), (seg.block, []))
        assert seg.block.shm is seg and len(seg.attached) == sum(
            o.shm is seg for o in blocks[id(seg.block)][1]), f"shm {seg.id}: attachments"
    for block, objs in blocks.values():
        held = (1 if getattr(block, "shm", None) is not None else 0) + ids.get(id(block), 0)
        assert block.refs == len(objs) + held, f"block refs {block.refs} != {len(objs)} maps"
        if isinstance(block, DeviceBlock):
            assert block.pins == block.running == 0 and block.busy is None, "pinned at rest"
            assert sorted(map(id, (o for _, o in block.maps))) == sorted(map(id, objs))
    _check_ipc(system)
    for vgpu in system.virtual:
        _check_vgpu(system, vgpu, [b for b, _ in blocks.values()])
    for gpu in system.gpus:
        dev = [b for b, _ in blocks.values() if isinstance(b, DeviceBlock) and b.gpu is gpu.phys]
        assert set(map(id, dev)) == set(map(id, gpu.blocks)), "block registry"
        _check_pages(gpu, dev)
        _check_swap(system, gpu, dev)


def _check_ipc(system: GdevSystem) -> None:
    refs: dict[int, int] = {}
    for handle in system.handles.values():
        for va, n in handle.ipc.opens.items():
            obj = handle.space.objects.find(va)
            assert n >= 1 and obj is not None and obj.va == va and obj.shm is not None and \
                obj.shm.ipc, f"{handle}: IPC open at {va:#x} names no IPC mapping"
        for eid, n in handle.ipc.events.items():
            assert n >= 1 and eid in system.ipc_events.events, f"{handle}: dead event {eid}"
            refs[eid] = refs.get(eid, 0) + n
    assert {e: ev.refs for e, ev in system.ipc_events.events.items()} == refs, "event refs"


def _check_vgpu(system: GdevSystem, vgpu: VirtualGpu, blocks: list[Any]) -> None:
    mine = [b for b in blocks if b.vgpu is vgpu]
    dev = sum(b.resident_bytes for b in mine if isinstance(b, DeviceBlock))
    swapped = sum(b.size - b.resident_bytes for b in mine if isinstance(b, DeviceBlock))
    dma = sum(b.size for b in mine if isinstance(b, DmaBlock))
    assert vgpu.memory_used == dev, f"vGPU {vgpu.minor}: charged {vgpu.memory_used} != {dev}"
    assert vgpu.swap.swapped_bytes == swapped, f"vGPU {vgpu.minor}: swapped count drifted"
    assert vgpu.dma_used == dma, f"vGPU {vgpu.minor}: pinned {vgpu.dma_used} != {dma}"
    for handle in vgpu.handles:
        assert system.handles.get(handle.cid) is handle, f"{handle} not in the system"


def _check_swap(system: GdevSystem, gpu: Gpu, blocks: list[DeviceBlock]) -> None:
    area, index = gpu.swap, gpu.index
    on_dev = [int(a) for b in blocks for a in b.sw[b.sw >= 0]]
    assert len(set(on_dev)) == len(on_dev), f"gpu{index}: device swap page double-owned"
    assert area.device_used == len(on_dev) * PAGE, f"gpu{index}: device swap leak"
    if area.device is not None:
        area.device.check()
        lo, hi = area.extent[0], area.extent[0] + area.extent[1]  # type: ignore[index]
        assert all(lo <= a < hi for a in on_dev), "device swap page outside the area"
    host = sum(int(((b.pa < 0) & (b.sw < 0)).sum()) * PAGE for b in blocks)
    assert area.host_used == host, f"gpu{index}: host swap {area.host_used} != {host}"
    for v in system.virtual:
        if v.phys.index == index:
            mine = sum(int(((b.pa < 0) & (b.sw < 0)).sum()) * PAGE for b in blocks if b.vgpu is v)
            assert area.host_by_vgpu.get(v.minor, 0) == mine, f"vGPU {v.minor}: host swap"
    for b in blocks:
        assert not np.any((b.pa >= 0) & (b.sw >= 0)), "page both resident and swapped"
        assert b.host is not None or not np.any((b.pa < 0) & (b.sw < 0)), "lost host copy"


def _check_pages(gpu: Gpu, blocks: list[DeviceBlock]) -> None:
    allocator, index = gpu.allocator, gpu.index
    allocator.check()
    used = sorted(e for b in blocks for e in b.extents)
    area = gpu.swap.extent
    if area is not None:
        used = sorted(used + [area])
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
    objs = list(handle.space.objects)
    end = 0
    for obj in objs:
        assert obj.va >= end, f"{handle}: mappings overlap at {obj.va:#x}"
        end = obj.va + obj.size
        _check_translation(handle, obj)
        res = obj.vmm
        if res is not None:
            assert res.covers(obj.va, obj.size) and obj in res.maps, f"{obj}: reservation"
            assert handle.vmm.reservations.get(res.va) is res, f"{obj}: reservation gone"
    reserved = handle.vmm.reservations.values()
    assert sum(len(r.maps) for r in reserved) == sum(o.vmm is not None for o in objs)
    used = sum(o.size for o in objs if o.vmm is None) + sum(r.size for r in reserved)
    assert handle.space.vas.used_bytes == used, f"{handle}: VA space leak"
    handle.space.vas.check()
    assert len(handle.space.objects.pinned) == sum(isinstance(o.block, DmaBlock) for o in objs)
    return objs


def _check_translation(handle: Handle, obj: MemObject) -> None:
    block = obj.block
    if isinstance(block, DmaBlock):
        assert handle.mmu.translate(obj.va) == (obj.aperture, 0), f"{obj}: bad translation"
        return
    lo, hi = obj.pages
    for first, pa, n in block.runs():
        hit = obj.run_va(first, n)
        if hit is not None:
            va, at, m = hit
            pa += (at - first) * PAGE
            for v, want in ((va, pa), (va + m * PAGE - 1, pa + m * PAGE - 1)):
                assert handle.mmu.translate(v) == (0, want), f"{obj}: {v:#x} mistranslated"
    gaps = [(f, n) for f, _, n in block.runs(resident=False)]
    if not obj.prot:                        # an access-less mapping maps nothing
        gaps = [(lo, hi - lo)]
    for first, n in gaps:
        first, end = max(first, lo), min(first + n, hi)
        if first >= end:
            continue
        for v in (obj.va + (first - lo) * PAGE, obj.va + (end - lo) * PAGE - 1):
            try:
                handle.mmu.translate(v)
            except MmuFault:
                continue
            raise AssertionError(f"{obj}: evicted page {v:#x} still mapped")
