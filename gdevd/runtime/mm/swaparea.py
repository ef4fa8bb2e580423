"""Where evicted device pages go: a GPU's temporal device swap area and its host swap.

Theory of operation
-------------------
Each physical GPU has one :class:`SwapArea`.  Its *device* part is a contiguous extent of
VRAM reserved from the GPU's allocator (``swap_percent`` of the device memory, Gdev's
temporal swap: 10 % by default, 0 disables it), carved into pages by its own
:class:`~.allocator.ExtentAllocator`.  Its *host* part is each block's own host copy
(``DeviceBlock.host``, allocated on the block's first eviction to the host), limited in total
to ``host_limit`` bytes.  An eviction goes to the device area when the whole eviction fits,
else to the host; the migrator (:func:`.swap.migrator`) moves device-area pages on to the host
in the background, so the device area is a staging buffer, not a second tier that fills up.

Host swap is accounted per vGPU (the vGPU of the evicted block): each may hold its
``memory_share`` percent of ``host_limit``, so a tenant that swaps without end fills its own
part only, and another vGPU's evictions still find room (Invariant: ``host_used`` is the
sum of ``host_by_vgpu``).

The area only keeps space and statistics; the swap module moves data and keeps the blocks'
page tables.  Counters (:class:`SwapCounters`) live on every vGPU and every context.
"""

from __future__ import annotations

import dataclasses
import errno
from typing import TYPE_CHECKING, Any

import numpy as np
import trio

from ...errors import GdevError
from ..defaults import PAGE_SIZE as PAGE
from .allocator import ExtentAllocator

if TYPE_CHECKING:
    from .memory import DeviceBlock


@dataclasses.dataclass
class SwapCounters:
    """Swap statistics of a vGPU or a context (bytes and counts since it was created)."""

    swap_out_bytes: int = 0     # bytes evicted from VRAM
    swap_out_count: int = 0     # evictions
    swap_in_bytes: int = 0      # bytes brought back into VRAM
    swap_in_count: int = 0      # swap-ins
    swapped_bytes: int = 0      # bytes now held in swap (device area or host)

    def evicted(self, nbytes: int) -> None:
        """Count one eviction of ``nbytes``."""
        self.swap_out_bytes += nbytes
        self.swap_out_count += 1
        self.swapped_bytes += nbytes

    def restored(self, nbytes: int) -> None:
        """Count one swap-in of ``nbytes``."""
        self.swap_in_bytes += nbytes
        self.swap_in_count += 1
        self.swapped_bytes -= nbytes


def page_addrs(extents: list[tuple[int, int]]) -> np.ndarray:
    """The page addresses of ``extents``, in order, as an int64 array."""
    if not extents:
        return np.empty(0, np.int64)
    return np.concatenate([np.arange(a, a + n, PAGE, dtype=np.int64) for a, n in extents])


def page_runs(addrs: np.ndarray) -> list[tuple[int, int, int]]:
    """Runs ``(index, address, pages)`` of consecutive, contiguous page addresses."""
    if not len(addrs):
        return []
    breaks = np.nonzero(np.diff(addrs) != PAGE)[0] + 1
    starts = np.concatenate(([0], breaks))
    ends = np.concatenate((breaks, [len(addrs)]))
    return [(int(s), int(addrs[s]), int(e - s)) for s, e in zip(starts, ends, strict=True)]


class SwapArea:
    """The swap of one physical GPU: a reserved VRAM extent and a host budget."""

    def __init__(self, gpu: Any, allocator: ExtentAllocator, percent: int,
                 host_limit: int) -> None:
        self.gpu, self.main = gpu, allocator
        self.pages = gpu.mem.reshape(-1, PAGE)          # VRAM as rows of one page
        self.host_limit, self.host_used = host_limit, 0
        self.host_by_vgpu: dict[int, int] = {}         # vGPU minor -> host swap bytes
        self.extent: tuple[int, int] | None = None
        self.device: ExtentAllocator | None = None
        self.percent = 0
        self.pending: set[DeviceBlock] = set()          # blocks with pages in the device area
        self.wake = trio.Event()                        # the migrator has work
        self.changed = trio.Event()                     # memory was freed or unpinned
        self.swapin = trio.Lock()                       # one swap-in phase at a time
        self.resize(percent)

    @property
    def device_size(self) -> int:
        """Bytes of VRAM reserved for the device area."""
        return self.extent[1] if self.extent else 0

    @property
    def device_used(self) -> int:
        """Bytes of the device area holding evicted pages."""
        return self.device.used_bytes if self.device else 0

    def resize(self, percent: int) -> None:
        """Reserve ``percent`` of the GPU's memory as the device area (0: none).

        EBUSY while the area holds pages; ENOMEM (nothing changes) if the VRAM is not free
        in one piece.
        """
        if self.device_used:
            raise GdevError(errno.EBUSY, "the device swap area holds evicted pages")
        size = self.gpu.memory_size * percent // 100 // PAGE * PAGE
        old = self.extent
        if old:
            self.main.free([old])
        self.extent = self.device = None
        try:
            if size:
                [self.extent] = self.main.alloc(size)
                self.device = ExtentAllocator(self.extent[0], size, PAGE)
        except GdevError:
            if old:
                [self.extent] = self.main.alloc(old[1])
                self.device = ExtentAllocator(self.extent[0], old[1], PAGE)
            raise GdevError(errno.ENOMEM, f"no free VRAM extent of {size} bytes for swap") \
                from None
        self.percent = percent

    def take_device(self, npages: int) -> np.ndarray | None:
        """Page addresses for ``npages`` evicted pages in the device area, or None."""
        if not self.device or self.device.free_bytes < npages * PAGE or not npages:
            return None
        return page_addrs(self.device.alloc(npages * PAGE, split=True))

    def give_device(self, addrs: np.ndarray) -> None:
        """Return device-area pages."""
        if len(addrs) and self.device is not None:
            self.device.free([(a, n * PAGE) for _, a, n in page_runs(np.sort(addrs))])

    def host_quota(self, vgpu: Any) -> int:
        """Host swap bytes ``vgpu`` may hold: its memory share of ``host_limit``."""
        return self.host_limit * vgpu.memory_share // 100

    def take_host(self, vgpu: Any, nbytes: int) -> bool:
        """Reserve ``nbytes`` of host swap for a block of ``vgpu``; False if over its quota
        or over ``host_limit``."""
        mine = self.host_by_vgpu.get(vgpu.minor, 0)
        if self.host_used + nbytes > self.host_limit or mine + nbytes > self.host_quota(vgpu):
            return False
        self.host_by_vgpu[vgpu.minor] = mine + nbytes
        self.host_used += nbytes
        return True

    def give_host(self, vgpu: Any, nbytes: int) -> None:
        """Return ``nbytes`` of host swap held for a block of ``vgpu``."""
        if nbytes:
            self.host_by_vgpu[vgpu.minor] -= nbytes
            self.host_used -= nbytes

    def forget(self, block: DeviceBlock) -> None:
        """Drop everything ``block`` holds in swap (the block is being released)."""
        dev = block.sw[block.sw >= 0]
        host = int(np.count_nonzero((block.pa < 0) & (block.sw < 0))) * PAGE
        self.give_device(dev)
        self.give_host(block.vgpu, host)
        swapped = len(dev) * PAGE + host
        for counters in _counters_of(block):
            counters.swapped_bytes -= swapped
        self.pending.discard(block)
        block.sw[:] = -1

    def notify(self) -> None:
        """Wake whoever waits for memory to be freed or unpinned."""
        self.changed.set()
        self.changed = trio.Event()


def _counters_of(block: DeviceBlock) -> list[SwapCounters]:
    out = [block.vgpu.swap]
    if block.owner is not None:
        out.append(block.owner.counters.swap)
    return out


counters_of = _counters_of
