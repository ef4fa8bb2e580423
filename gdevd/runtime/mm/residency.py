"""Residency for the verbs: mapping device blocks, pinning what an operation touches.

Theory of operation
-------------------
A device block is mapped into a context only where its pages are resident
(:func:`map_block`); an evicted page is unmapped everywhere, so a stray access faults instead
of reading another context's data.  An operation that touches device memory brings back
what it needs first and *pins* it for its duration, so no eviction takes it away meanwhile:

* a copy pins the blocks it touches and brings back only the pages its range covers
  (:func:`touching`);
* a device-to-host copy of a range not wholly resident is served from swap without
  bringing it back (:func:`read_swapped`);
* a launch pins every device block of the context and brings all of it back
  (:func:`resident_all`), because a kernel may touch any of it.

A pin counts in ``block.pins`` from before the swap-in and in ``block.running`` after it:
an allocation that finds only *running* pins in its way waits for them (they finish without
needing memory), never for operations still swapping in (that could deadlock).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING

import numpy as np
import trio

from ..defaults import PAGE_SIZE as PAGE
from .memory import DeviceBlock, MemObject
from .swap import done, map_resident, move, settle, swap_in

if TYPE_CHECKING:
    from ..handle import Handle


def map_block(handle: Handle, obj: MemObject) -> None:
    """Register mapping ``obj`` of a device block in ``handle`` and map its resident pages.

    The caller has settled the block (no migration in flight) and allocated ``obj.va``.
    """
    block = obj.block
    assert isinstance(block, DeviceBlock) and block.busy is None
    pages = np.nonzero(block.pa >= 0)[0]
    map_resident(block, pages, [(handle, obj)])
    block.maps.append((handle, obj))
    handle.space.objects.add(obj)


def unmap_block(handle: Handle, obj: MemObject) -> None:
    """Unmap the resident pages of mapping ``obj`` and forget the mapping."""
    block = obj.block
    assert isinstance(block, DeviceBlock)
    for first, _, n in block.runs():
        hit = obj.run_va(first, n)
        if hit is not None:
            handle.mmu.unmap(hit[0], hit[2] * PAGE)
    block.maps = [(h, o) for h, o in block.maps if o is not obj]


def _unpin(blocks: list[DeviceBlock], running: list[DeviceBlock], handle: Handle) -> None:
    for block in blocks:
        block.pins -= 1
    for block in running:
        block.running -= 1
    handle.gpu.swap.notify()


def touching(handle: Handle, *ranges: tuple[int, int],
             bring: bool = True) -> AbstractAsyncContextManager[list[DeviceBlock]]:
    """Pin the device blocks under ``ranges`` (va, size) of ``handle`` for the body
    (``async with touching(...) as blocks``).

    Each range is looked up at once (``handle.lookup``: ENOENT / EFAULT).  With ``bring``
    the pages covering each range are swapped in first.  Pinned memory (DMA) ranges are
    skipped.  Yields the pinned blocks.
    """
    spans = []
    for va, size in ranges:
        for obj, at, n in handle.space.spans(va, size):
            if isinstance(obj.block, DeviceBlock):
                off = obj.offset + at - obj.va
                spans.append((obj.block, off // PAGE, -(-(off + n) // PAGE)))
    return _pinned(handle, spans, bring)


@asynccontextmanager
async def resident_all(handle: Handle) -> AsyncIterator[None]:
    """Pin every device block of ``handle`` and bring all of it back (for a launch)."""
    spans = [(o.block, *o.pages) for o in handle.space.objects
             if isinstance(o.block, DeviceBlock)]
    async with _pinned(handle, spans, True):
        yield


PIN_BURST = 16  # operations of one context pinning without a schedule point, at most


@asynccontextmanager
async def _pinned(handle: Handle, spans: list[tuple[DeviceBlock, int, int]],
                  bring: bool) -> AsyncIterator[list[DeviceBlock]]:
    """Pin the blocks of ``spans`` (block, first page, end page), bringing the pages back.

    Swap-ins of one GPU run one at a time (its swap area's ``swapin`` lock), and pins are
    taken under that lock: so every pin a swap-in finds in its way belongs to an operation
    that is already running and will finish without needing memory, and waiting for it
    cannot deadlock.  A read that brings nothing back needs no lock, and neither does an
    operation whose pages are all resident and settled (:func:`_settled_resident`) while no
    swap-in runs: it pins them with no checkpoint after the check, is running at once and
    needs no memory.  While a swap-in holds the lock, everyone queues behind it (the lock is
    fair).  Every :data:`PIN_BURST`-th operation of a context yields before it pins, so a
    run of small copies neither holds the loop nor keeps a block pinned whenever an
    allocation waiting to evict it gets to run.
    """
    handle.counters.unyielded_pins += 1
    if handle.counters.unyielded_pins >= PIN_BURST:
        handle.counters.unyielded_pins = 0
        await trio.lowlevel.checkpoint()
    blocks = [b for b, _, _ in spans]
    running: list[DeviceBlock] = []
    pinned: list[DeviceBlock] = []
    swapin = handle.gpu.swap.swapin
    try:
        if bring and spans and (swapin.locked() or not _settled_resident(spans)):
            async with swapin:
                for block in blocks:
                    block.pins += 1
                    pinned.append(block)
                for block, lo, hi in spans:
                    await swap_in(handle, block, lo, hi)
        else:
            for block in blocks:
                block.pins += 1
                pinned.append(block)
            for block in blocks:
                await settle(block)             # an eviction may be under way (not if bring)
        for block in blocks:
            block.running += 1
            running.append(block)
        yield blocks
    finally:
        _unpin(pinned, running, handle)


def _settled_resident(spans: list[tuple[DeviceBlock, int, int]]) -> bool:
    """Whether every page of ``spans`` is in VRAM and no migration moves its block (an
    eviction marks a block busy before its first checkpoint)."""
    return all(block.busy is None and bool((block.pa[lo:hi] >= 0).all())
               for block, lo, hi in spans)


def is_resident(block: DeviceBlock, off: int, size: int) -> bool:
    """Whether bytes ``[off, off + size)`` of ``block`` are all in VRAM."""
    return bool(np.all(block.pa[off // PAGE:-(-(off + size) // PAGE)] >= 0))


async def read_swapped(handle: Handle, block: DeviceBlock, off: int, out: np.ndarray) -> None:
    """Fill ``out`` from bytes ``off..`` of pinned ``block`` wherever they are (VRAM, device
    swap or host swap), without bringing anything back."""
    await settle(block)
    area = handle.gpu.swap
    block.busy = trio.Event()                   # keep the migrator off while we read
    try:
        await move(_gather, block, area.pages, off, out, nbytes=len(out))
    finally:
        done(area, block)


def _gather(block: DeviceBlock, rows: np.ndarray, off: int, out: np.ndarray) -> None:
    lo, hi = off // PAGE, -(-(off + len(out)) // PAGE)
    pa, sw = block.pa[lo:hi], block.sw[lo:hi]
    buf = np.empty((hi - lo, PAGE), np.uint8)
    res, dev = pa >= 0, (pa < 0) & (sw >= 0)
    host = ~(res | dev)
    buf[res] = rows[pa[res] // PAGE]
    buf[dev] = rows[sw[dev] // PAGE]
    if host.any():
        assert block.host is not None
        buf[host] = block.host[np.arange(lo, hi)[host]]
    start = off - lo * PAGE
    out[:] = buf.reshape(-1)[start:start + len(out)]
