"""Swapping: victim selection, eviction, swap-in, the background migrator, share shrinking.

Theory of operation
-------------------
*Allocation* (:func:`alloc_pages`) takes VRAM pages for a vGPU.  If the vGPU's share or the
device cannot hold them, a **victim** is evicted and the allocation retried.  A victim is a
device block (Gdev's implicit sharing, at object granularity) that is resident, not pinned
and not migrating; it belongs to the vGPU over its share (share case) or to any vGPU of the
GPU (device case), and its priority (the highest of the contexts mapping it) is not above the
requester's.  Among those, the lowest priority wins, and a block at least as large as the
deficit is preferred (the paper's rule; the smallest such one, so the least is swapped);
when none is large enough, the largest is taken and the loop goes on.  When every candidate
is pinned by a *running* operation, the requester waits for an unpin; when there is none at
all, or swap is full, the requester alone gets ``ENOMEM``.

*Eviction* (:func:`evict`) unmaps the block's resident pages from every context mapping it
(no kernel can read garbage: a touch faults, and launches swap in first), copies them on a
worker thread to the device swap area (if the whole eviction fits) or to the block's host
copy, then scrubs and frees the VRAM.  *Swap-in* (:func:`swap_in`) does the reverse for a
page range, allocating through :func:`alloc_pages` (so it may evict others).  Both mark the
block ``busy`` while data move; others wait for it.  The *migrator* moves device-area pages
to the host in the background, overlapped with whatever the engines run.

All of this runs in the system's trio loop; the only checkpoints are the awaits (the copies
on worker threads, waits on ``busy`` and on unpins).  Every decision is re-checked after one.
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Any

import numpy as np
import trio

from ...errors import GdevError
from .. import defaults as D
from ..defaults import PAGE_SIZE as PAGE
from .swaparea import SwapArea, counters_of, page_addrs, page_runs

if TYPE_CHECKING:
    from ..handle import Handle
    from ..pergpu import Gpu
    from ..system import GdevSystem, VirtualGpu
    from .memory import DeviceBlock

_TRIES = 10_000


def block_priority(system: GdevSystem, block: DeviceBlock) -> int:
    """The priority of a block: the highest among the contexts mapping it (or its owner)."""
    users = {id(h): h for h, _ in block.maps if not h.closed}
    if not users and block.owner is not None and not block.owner.closed:
        users[id(block.owner)] = block.owner
    return max((system.priority_of(h) for h in users.values()), default=D.PRIO_MIN)


def _choose(system: GdevSystem, gpu: Gpu, vgpu: VirtualGpu | None, prio: int,
            deficit: int, skip: frozenset | set = frozenset()) -> tuple[DeviceBlock | None, bool]:
    """(victim or None, whether some candidate is held by a running operation); blocks in
    ``skip`` (whose eviction found no swap room) are passed over."""
    best, best_key, waiting = None, None, False
    for block in gpu.blocks:
        if (vgpu is not None and block.vgpu is not vgpu) or block in skip:
            continue
        resident = block.resident_bytes
        p = block_priority(system, block) if resident else 0
        if not resident or p > prio:
            continue
        if block.pins or block.busy is not None:
            waiting = waiting or block.running > 0
            continue
        key = (0, p, resident) if resident >= deficit else (1, p, -resident)
        if best_key is None or key < best_key:
            best, best_key = block, key
    return best, waiting


async def alloc_pages(requester: Handle, vgpu: VirtualGpu, need: int) -> list[tuple[int, int]]:
    """Take ``need`` bytes of VRAM charged to ``vgpu`` (the caller charges them at once).

    Evicts victims as the module docstring says.  ENOMEM when it cannot.
    """
    system, gpu = requester.system, vgpu.gpu
    allocator, area = gpu.allocator, gpu.swap
    if need > vgpu.memory_size or need > allocator.size - area.device_size:
        raise GdevError(errno.ENOMEM, f"{need} bytes exceed vGPU {vgpu.minor}'s share "
                                      f"({vgpu.memory_size}) or the device")
    full: set[DeviceBlock] = set()   # victims whose vGPU has no host swap left
    for _ in range(_TRIES):
        over = vgpu.memory_used + need - vgpu.memory_size
        if over <= 0 and allocator.free_bytes >= need:
            return allocator.alloc(need, split=True)
        scope, deficit = (vgpu, over) if over > 0 else (None, need - allocator.free_bytes)
        victim, waiting = _choose(system, gpu, scope, system.priority_of(requester), deficit,
                                  full)
        if victim is not None:
            if await evict(system, victim):
                continue
            full.add(victim)  # its vGPU's host swap is full: another victim may have room
            continue
        if waiting:
            await area.changed.wait()
            full.clear()
            continue
        break
    raise GdevError(errno.ENOMEM, f"vGPU {vgpu.minor}: no memory or swap for {need} bytes "
                                  f"({vgpu.memory_used}/{vgpu.memory_size} resident)")


def _copy_rows(dst: np.ndarray, dst_rows: Any, src: np.ndarray, src_rows: Any) -> None:
    """dst[dst_rows] = src[src_rows] for page rows (on a worker thread)."""
    dst[dst_rows] = src[src_rows]


async def move(fn: Any, *args: Any, nbytes: int) -> None:
    """Run copy ``fn(*args)``: inline for small ones, else on a worker thread."""
    if nbytes <= D.SWAP_INLINE_MAX:
        fn(*args)
        await trio.lowlevel.checkpoint()
    else:
        await trio.to_thread.run_sync(fn, *args)


def unmap_resident(block: DeviceBlock, pages: np.ndarray, handles: Any = None) -> None:
    """Unmap resident ``pages`` of ``block`` from every context mapping it (or ``handles``'
    (context, mapping) pairs only)."""
    for first, _, n in page_runs(pages):
        page = int(pages[first])
        for handle, obj in (handles or block.maps):
            hit = obj.run_va(page, n)
            if hit is not None:
                handle.mmu.unmap(hit[0], hit[2] * PAGE)


def map_resident(block: DeviceBlock, pages: np.ndarray, handles: Any = None) -> None:
    """Map resident ``pages`` (ascending) of ``block`` in every context mapping it (each
    mapping the part of them it shows, with its access)."""
    for first, _, n in page_runs(pages):
        sub = block.pa[pages[first:first + n]]
        for i, pa, m in page_runs(sub):
            page = int(pages[first + i])
            for handle, obj in (handles or block.maps):
                hit = obj.run_va(page, m)
                if hit is not None:
                    va, at, count = hit
                    handle.mmu.map(va, pa + (at - page) * PAGE, count * PAGE, flags=obj.prot)


async def evict(system: GdevSystem, block: DeviceBlock) -> bool:
    """Evict every resident page of ``block``; False if swap has no room for them."""
    area: SwapArea = block.vgpu.gpu.swap
    pages = np.nonzero(block.pa >= 0)[0]
    nbytes = len(pages) * PAGE
    dest = area.take_device(len(pages))
    if dest is None and not area.take_host(block.vgpu, nbytes):
        return False
    block.busy = trio.Event()
    unmap_resident(block, pages)
    src = block.pa[pages].copy()
    try:
        if dest is not None:
            await move(_copy_rows, area.pages, dest // PAGE, area.pages, src // PAGE,
                        nbytes=nbytes)
        else:
            if block.host is None:
                block.host = np.zeros((block.npages, PAGE), np.uint8)
            await move(_copy_rows, block.host, pages, area.pages, src // PAGE, nbytes=nbytes)
    finally:
        with trio.CancelScope(shield=True):
            _finish_evict(area, block, pages, src, dest)
    return True


def _finish_evict(area: SwapArea, block: DeviceBlock, pages: np.ndarray, src: np.ndarray,
                  dest: np.ndarray | None) -> None:
    extents = [(a, n * PAGE) for _, a, n in page_runs(np.sort(src))]
    for pa, length in extents:
        block.gpu.scrub(pa, length)
    area.main.free(extents)
    block.pa[pages] = -1
    if dest is not None:
        block.sw[pages] = dest
        area.pending.add(block)
        area.wake.set()
    nbytes = len(pages) * PAGE
    block.vgpu.memory_used -= nbytes
    for counters in counters_of(block):
        counters.evicted(nbytes)
    done(area, block)


def done(area: SwapArea, block: DeviceBlock) -> None:
    """End a migration of ``block``: wake its waiters and anyone waiting for memory."""
    busy, block.busy = block.busy, None
    if busy is not None:
        busy.set()
    area.notify()


async def settle(block: DeviceBlock) -> None:
    """Wait until no migration moves ``block``'s pages."""
    while block.busy is not None:
        await block.busy.wait()


async def swap_in(requester: Handle, block: DeviceBlock, lo: int, hi: int) -> None:
    """Make pages ``[lo, hi)`` of ``block`` resident (the caller has pinned the block)."""
    await settle(block)
    pages = np.nonzero(block.pa[lo:hi] < 0)[0] + lo
    if not len(pages):
        return
    block.busy = trio.Event()
    area: SwapArea = block.vgpu.gpu.swap
    try:
        new = page_addrs(await alloc_pages(requester, block.vgpu, len(pages) * PAGE))
    except BaseException:
        done(area, block)
        raise
    block.vgpu.memory_used += len(pages) * PAGE
    try:
        await _load(area, block, pages, new)
    finally:
        with trio.CancelScope(shield=True):
            _finish_swap_in(area, block, pages, new)


async def _load(area: SwapArea, block: DeviceBlock, pages: np.ndarray, new: np.ndarray) -> None:
    on_dev = block.sw[pages] >= 0
    if on_dev.any():
        await move(_copy_rows, area.pages, new[on_dev] // PAGE, area.pages,
                    block.sw[pages[on_dev]] // PAGE, nbytes=int(on_dev.sum()) * PAGE)
    if (~on_dev).any():
        assert block.host is not None
        await move(_copy_rows, area.pages, new[~on_dev] // PAGE, block.host, pages[~on_dev],
                    nbytes=int((~on_dev).sum()) * PAGE)


def _finish_swap_in(area: SwapArea, block: DeviceBlock, pages: np.ndarray,
                    new: np.ndarray) -> None:
    on_dev = block.sw[pages] >= 0
    area.give_device(block.sw[pages[on_dev]])
    area.give_host(block.vgpu, int((~on_dev).sum()) * PAGE)
    block.sw[pages] = -1
    block.pa[pages] = new
    map_resident(block, pages)
    if not np.any(block.pa < 0):
        block.host = None
        area.pending.discard(block)
    for counters in counters_of(block):
        counters.restored(len(pages) * PAGE)
    done(area, block)


async def migrator(area: SwapArea) -> None:
    """Move pages from the device swap area to host swap, in the background, forever."""
    while True:
        await area.wake.wait()
        area.wake = trio.Event()
        for block in list(area.pending):
            if block.busy is not None or block not in area.pending:
                continue
            sel = np.nonzero(block.sw >= 0)[0]
            if not len(sel):
                area.pending.discard(block)
                continue
            if not area.take_host(block.vgpu, len(sel) * PAGE):
                continue                    # this vGPU's host swap is full: stays on the device
            await _migrate(area, block, sel)


async def _migrate(area: SwapArea, block: DeviceBlock, sel: np.ndarray) -> None:
    block.busy = trio.Event()
    if block.host is None:
        block.host = np.zeros((block.npages, PAGE), np.uint8)
    try:
        await move(_copy_rows, block.host, sel, area.pages, block.sw[sel] // PAGE,
                    nbytes=len(sel) * PAGE)
    finally:
        area.give_device(block.sw[sel])
        block.sw[sel] = -1
        area.pending.discard(block)
        done(area, block)


async def shrink(system: GdevSystem, vgpu: VirtualGpu) -> None:
    """Evict from ``vgpu`` until its resident bytes fit its (new, smaller) share."""
    area = vgpu.gpu.swap
    while vgpu.memory_used > vgpu.memory_size:
        deficit = vgpu.memory_used - vgpu.memory_size
        victim, waiting = _choose(system, vgpu.gpu, vgpu, D.PRIO_MAX, deficit)
        if victim is not None and await evict(system, victim):
            continue
        if victim is None and not waiting and not any(b.pins for b in vgpu.gpu.blocks
                                                         if b.vgpu is vgpu):
            return                                      # nothing left to evict (swap full)
        await area.changed.wait()
