"""The /proc/gdev tree, declared once: Gdev's entries (``mod/gdev/gdev_proc.c``) plus ours.

Each :class:`Entry` says where it lives, its mode, how to parse, validate and format a value,
how to get and set it, and what it means.  ``scope`` is ``"global"`` (``/proc/gdev/NAME``,
the getter receives the system) or ``"vgpu"`` (``/proc/gdev/vdN/NAME``, the getter receives
the :class:`VirtualGpu`).  :mod:`procfs.generic` does every read and write from this table;
the FUSE tree builds its inodes from it.

Gdev prints ``"%u"`` without a newline and accepts any write (restoring out-of-range values
yet reporting success).  We print a newline and refuse a bad write with EINVAL, changing
nothing.  Changing ``memory_share`` changes that vGPU's ``memory_size`` (share of its
physical GPU's memory) at once, on a live system: new allocations see the new size, and
when the share shrinks below ``memory_used`` the excess is swapped out in the background
(lowest priority first, never data in use by a running kernel or copy; see
docs/memory.md), so nothing is lost.  Text entries (``shm``, ``contexts``) are tables.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gdevd.errors import GdevError

PERCENT = (0, 100)
PERIOD_US = (1, (1 << 32) - 1)


@dataclass(frozen=True)
class Entry:
    """One /proc/gdev file."""

    name: str
    scope: str  # "global" or "vgpu"
    mode: int
    help: str
    get: Callable[[Any], int | str]
    set: Callable[[Any, int], None] | None = None
    bounds: tuple[int, int] | None = None

    @property
    def writable(self) -> bool:
        """Whether the entry accepts writes (root only, by its mode)."""
        return self.set is not None

    def parse(self, data: bytes) -> int:
        """Parse a written value: an unsigned decimal, surrounding whitespace allowed."""
        text = data.strip()
        if not text or len(text) > 63 or not text.isdigit():
            raise GdevError(errno.EINVAL, f"{self.name}: not an unsigned integer: {data[:64]!r}")
        return int(text)

    def validate(self, value: int) -> None:
        """Refuse a value outside ``bounds`` with EINVAL."""
        if self.bounds and not self.bounds[0] <= value <= self.bounds[1]:
            lo, hi = self.bounds
            raise GdevError(errno.EINVAL, f"{self.name}: {value} outside [{lo}, {hi}]")

    def format(self, value: int | str) -> bytes:
        """The text a read returns: the value and a newline (a table as it is)."""
        if isinstance(value, str):
            return value.encode()
        return b"%d\n" % value


def _set_attr(attr: str) -> Callable[[Any, int], None]:
    def setter(vgpu: Any, value: int) -> None:
        setattr(vgpu, attr, value)
    return setter


def _set_memory_share(vgpu: Any, value: int) -> None:
    vgpu.memory_share = value  # memory_size follows (the runtime derives it from the share)
    system = getattr(vgpu, "system", None)
    if system is not None and vgpu.memory_used > vgpu.memory_size:
        system.shrink(vgpu)    # swap the excess out in the background


def _set_swap_percent(system: Any, value: int) -> None:
    if any(area.device_used for area in system.swap.values()):
        raise GdevError(errno.EBUSY, "the device swap area holds pages; retry when drained")
    for area in system.swap.values():
        area.resize(value)


def _sum_swap(attr: str) -> Callable[[Any], int]:
    return lambda system: sum(getattr(a, attr) for a in system.swap.values())


def _vgpu_swap(attr: str) -> Callable[[Any], int]:
    return lambda v: getattr(v.swap, attr)


RO, RW = 0o444, 0o644

ENTRIES: tuple[Entry, ...] = (
    Entry("device_count", "global", RO, "number of physical GPUs",
          lambda system: len(system.physical)),
    Entry("virtual_device_count", "global", RO, "number of virtual GPUs (/dev/gdevN files)",
          lambda system: len(system.virtual)),
    Entry("compute_bandwidth", "vgpu", RW, "compute share of the physical GPU, percent",
          lambda v: v.compute_bandwidth, _set_attr("compute_bandwidth"), PERCENT),
    Entry("memory_bandwidth", "vgpu", RW, "copy-engine share of the physical GPU, percent",
          lambda v: v.memory_bandwidth, _set_attr("memory_bandwidth"), PERCENT),
    Entry("memory_share", "vgpu", RW, "device memory share of the physical GPU, percent",
          lambda v: v.memory_share, _set_memory_share, PERCENT),
    Entry("period", "vgpu", RW, "budget period of the vGPU scheduler, microseconds",
          lambda v: v.period_us, _set_attr("period_us"), PERIOD_US),
    Entry("compute_bandwidth_used", "vgpu", RO, "measured compute utilisation, percent",
          lambda v: int(getattr(v, "compute_bandwidth_used", 0))),
    Entry("memory_bandwidth_used", "vgpu", RO, "measured copy-engine utilisation, percent",
          lambda v: int(getattr(v, "memory_bandwidth_used", 0))),
    Entry("phys", "vgpu", RO, "index of the physical GPU this vGPU runs on",
          lambda v: v.phys.index),
    Entry("memory_size", "vgpu", RO, "device memory this vGPU may use, bytes",
          lambda v: v.memory_size),
    Entry("memory_used", "vgpu", RO, "device memory charged to this vGPU, bytes",
          lambda v: v.memory_used),
    Entry("swap_percent", "global", RW, "temporal device swap area, percent of each GPU's "
          "memory (0 disables it; EBUSY while it holds pages)",
          lambda s: s.config.swap_percent if not s.swap else
          next(iter(s.swap.values())).percent, _set_swap_percent, (0, 50)),
    Entry("swap_size", "global", RO, "bytes of device memory reserved for temporal swap",
          _sum_swap("device_size")),
    Entry("swap_used", "global", RO, "bytes of the device swap areas holding evicted pages",
          _sum_swap("device_used")),
    Entry("host_swap_size", "global", RO, "host swap limit, bytes", _sum_swap("host_limit")),
    Entry("host_swap_used", "global", RO, "bytes of evicted pages in host swap",
          _sum_swap("host_used")),
    Entry("shm", "global", RO, "shared device memory segments (like /proc/sysvipc/shm)",
          lambda s: s.shm.listing()),
    Entry("contexts", "global", RO, "open contexts: owner, priority, resident and swap bytes",
          lambda s: context_listing(s)),
    Entry("swap_out_bytes", "vgpu", RO, "bytes swapped out of this vGPU's memory",
          _vgpu_swap("swap_out_bytes")),
    Entry("swap_out_count", "vgpu", RO, "evictions from this vGPU", _vgpu_swap("swap_out_count")),
    Entry("swap_in_bytes", "vgpu", RO, "bytes swapped back in", _vgpu_swap("swap_in_bytes")),
    Entry("swap_in_count", "vgpu", RO, "swap-ins", _vgpu_swap("swap_in_count")),
    Entry("swapped_bytes", "vgpu", RO, "bytes of this vGPU now in swap",
          _vgpu_swap("swapped_bytes")),
)


def context_listing(system: Any) -> str:
    """``/proc/gdev/contexts``: one line per open context with its memory and swap counters."""
    owned: dict[int, list[int]] = {}
    for blocks in system.blocks.values():
        for b in blocks:
            if b.owner is not None:
                row = owned.setdefault(b.owner.cid, [0, 0])
                row[0] += b.resident_bytes
                row[1] += b.size - b.resident_bytes
    lines = ["  cid vgpu    pid  uid prio   resident    swapped  swap_out_bytes swap_out "
             "swap_in_bytes swap_in"]
    for cid, h in sorted(system.handles.items()):
        res, swp = owned.get(cid, [0, 0])
        c = h.swap
        lines.append(f"{cid:5d} {h.vgpu.minor:4d} {h.cred.pid:6d} {h.cred.uid:4d} "
                     f"{system.priority_of(h):4d} {res:10d} {swp:10d} {c.swap_out_bytes:15d} "
                     f"{c.swap_out_count:8d} {c.swap_in_bytes:13d} {c.swap_in_count:7d}")
    return "\n".join(lines) + "\n"

GLOBAL = tuple(e for e in ENTRIES if e.scope == "global")
PER_VGPU = tuple(e for e in ENTRIES if e.scope == "vgpu")
