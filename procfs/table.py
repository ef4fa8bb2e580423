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
from gdevd.runtime import defaults as D
from gdevd.runtime import limits_text
from procfs import engine as X
from procfs import guest as G
from procfs import metrics as M
from procfs import sched as S
from procfs.shares import memory_overcommit, set_bandwidth, set_memory_share

PERCENT = (0, 100)
PERIOD_US = (1, (1 << 32) - 1)


@dataclass(frozen=True)
class Entry:
    """One /proc/gdev file."""

    name: str
    scope: str  # "global" or "vgpu"
    mode: int
    help: str
    get: Callable[[Any], Any]
    set: Callable[[Any, Any], None] | None = None
    bounds: tuple[int, int] | None = None
    parser: Callable[[bytes], Any] | None = None     # text entries: bytes -> value or EINVAL
    formatter: Callable[[Any], bytes] | None = None  # text entries: value -> bytes

    @property
    def writable(self) -> bool:
        """Whether the entry accepts writes (root only, by its mode)."""
        return self.set is not None

    def parse(self, data: bytes) -> Any:
        """Parse a written value: an unsigned decimal, surrounding whitespace allowed
        (or the entry's own ``parser``)."""
        if self.parser is not None:
            return self.parser(data)
        text = data.strip()
        if not text or len(text) > 63 or not text.isdigit():
            raise GdevError(errno.EINVAL, f"{self.name}: not an unsigned integer: {data[:64]!r}")
        return int(text)

    def validate(self, value: int) -> None:
        """Refuse a value outside ``bounds`` with EINVAL."""
        if self.bounds and not self.bounds[0] <= value <= self.bounds[1]:
            lo, hi = self.bounds
            raise GdevError(errno.EINVAL, f"{self.name}: {value} outside [{lo}, {hi}]")

    def format(self, value: Any) -> bytes:
        """The text a read returns: the entry's ``formatter``, a table as it is, or the value
        and a newline."""
        if self.formatter is not None:
            return self.formatter(value)
        if isinstance(value, str):
            return value.encode()
        return b"%d\n" % value


def _set_attr(attr: str) -> Callable[[Any, int], None]:
    def setter(vgpu: Any, value: int) -> None:
        setattr(vgpu, attr, value)
    return setter


def _set_ioctl_poll(system: Any, us: int) -> None:
    system.config.ioctl_poll_us = us  # read live by gdevd/ioctl/busypoll.py


def _set_swap_percent(system: Any, value: int) -> None:
    if any(g.swap.device_used for g in system.gpus):
        raise GdevError(errno.EBUSY, "the device swap area holds pages; retry when drained")
    for gpu in system.gpus:
        gpu.swap.resize(value)


def _sum_swap(attr: str) -> Callable[[Any], int]:
    return lambda system: sum(getattr(g.swap, attr) for g in system.gpus)


def _vgpu_swap(attr: str) -> Callable[[Any], int]:
    return lambda v: getattr(v.swap, attr)


RO, RW = 0o444, 0o644

ENTRIES: tuple[Entry, ...] = (
    Entry("device_count", "global", RO, "number of physical GPUs",
          lambda system: len(system.physical)),
    Entry("virtual_device_count", "global", RO, "number of virtual GPUs (/dev/gdevN files)",
          lambda system: len(system.virtual)),
    Entry("compute_bandwidth", "vgpu", RW, "compute share of the physical GPU, percent "
          "(the vGPUs of one GPU total at most 100)",
          lambda v: v.compute_bandwidth, set_bandwidth("compute_bandwidth"), PERCENT),
    Entry("memory_bandwidth", "vgpu", RW, "copy-engine share of the physical GPU, percent "
          "(the vGPUs of one GPU total at most 100)",
          lambda v: v.memory_bandwidth, set_bandwidth("memory_bandwidth"), PERCENT),
    Entry("memory_share", "vgpu", RW, "device memory share of the physical GPU outside its "
          "temporal swap area, percent (may total over 100: swap backs the excess, see "
          "memory_overcommit)",
          lambda v: v.memory_share, set_memory_share, PERCENT),
    Entry("memory_overcommit", "vgpu", RO, "percent by which the memory shares of this "
          "vGPU's physical GPU total over 100 (0: not overcommitted)", memory_overcommit),
    Entry("period", "vgpu", RW, "budget period of the vGPU scheduler, microseconds",
          lambda v: v.period_us, _set_attr("period_us"), PERIOD_US),
    Entry("compute_bandwidth_used", "vgpu", RO,
          "measured compute utilisation over util_window_us, percent",
          lambda v: int(getattr(v, "compute_bandwidth_used", 0))),
    Entry("memory_bandwidth_used", "vgpu", RO,
          "measured copy-engine utilisation over util_window_us, percent",
          lambda v: int(getattr(v, "memory_bandwidth_used", 0))),
    Entry("phys", "vgpu", RO, "index of the physical GPU this vGPU runs on",
          lambda v: v.phys.index),
    Entry("memory_size", "vgpu", RO, "device memory this vGPU may use, bytes",
          lambda v: v.memory_size),
    Entry("memory_used", "vgpu", RO, "device memory charged to this vGPU, bytes",
          lambda v: v.memory_used),
    Entry("swap_percent", "global", RW, "temporal device swap area, percent of each GPU's "
          "memory (0 disables it; EBUSY while it holds pages)",
          lambda s: s.config.swap_percent if not s.gpus else
          s.gpus[0].swap.percent, _set_swap_percent, (0, 50)),
    Entry("ioctl_poll_us", "global", RW, "how long an ioctl connection busy-polls for its "
          "client's next request before sleeping, microseconds (0 turns it off)",
          lambda s: s.config.ioctl_poll_us, _set_ioctl_poll, (0, D.IOCTL_POLL_US_MAX)),
    Entry("swap_size", "global", RO, "bytes of device memory reserved for temporal swap",
          _sum_swap("device_size")),
    Entry("swap_used", "global", RO, "bytes of the device swap areas holding evicted pages",
          _sum_swap("device_used")),
    Entry("host_swap_size", "global", RO, "host swap limit, bytes", _sum_swap("host_limit")),
    Entry("host_swap_used", "global", RO, "bytes of evicted pages in host swap",
          _sum_swap("host_used")),
    Entry("shm", "global", RO, "shared device memory segments (like /proc/sysvipc/shm)",
          lambda s: s.shm.listing()),
    Entry("limits", "global", RO, "per-tenant limits and each user's use of them "
          "(docs/security.md)", limits_text),
    Entry("host_swap_held", "vgpu", RO, "bytes of this vGPU's evicted pages in host swap "
          "(at most its memory_share of host_swap_size)",
          lambda v: v.gpu.swap.host_by_vgpu.get(v.minor, 0)),
    Entry("swap_out_bytes", "vgpu", RO, "bytes swapped out of this vGPU's memory",
          _vgpu_swap("swap_out_bytes")),
    Entry("swap_out_count", "vgpu", RO, "evictions from this vGPU", _vgpu_swap("swap_out_count")),
    Entry("swap_in_bytes", "vgpu", RO, "bytes swapped back in", _vgpu_swap("swap_in_bytes")),
    Entry("swap_in_count", "vgpu", RO, "swap-ins", _vgpu_swap("swap_in_count")),
    Entry("swapped_bytes", "vgpu", RO, "bytes of this vGPU now in swap",
          _vgpu_swap("swapped_bytes")),
)

# The scheduler's entries (gdevd/runtime/sched, docs/scheduling.md); helpers in procfs/sched.py.
ENTRIES += (
    Entry("scheduler", "global", RW, "vGPU policy: reads '[band] credit fifo null' (the "
          "current one in brackets, as Linux's I/O schedulers), write one name",
          S.get_policy, S.set_policy, parser=S.parse_policy,
          formatter=S.format_choices),
    Entry("queueing", "global", RW, "mrq (separate compute and copy queues) or sdq (one)",
          S.get_queueing, S.set_queueing, parser=S.parse_queueing,
          formatter=S.format_word),
    Entry("band_wait_us", "global", RW, "BAND time buffering, microseconds",
          S.get_band_wait, S.set_band_wait, (0, 1_000_000)),
    Entry("util_window_us", "global", RW, "window of the *_bandwidth_used measurements, us",
          S.get_window, S.set_window, (1000, 60_000_000)),
    Entry("instances_max", "global", RW, "operations in flight per context per resource",
          S.get_instances, S.set_instances, (1, 4096)),
    Entry("contexts", "global", RO, "every open context: pid, vGPU, priority, memory, "
          "compute and copy time (ms), launches, copies, bytes copied, wait time (ms), "
          "resident and swapped bytes, swap-out and swap-in bytes and counts, the opener's uid "
          "and process name",
          S.contexts, formatter=S.format_text),
    Entry("metrics", "global", RO, "every vGPU's and context's figures in Prometheus' text "
          "format (node_exporter's textfile collector takes it as is)",
          M.render, formatter=S.format_text),
    Entry("priority", "global", RW, "per-context priority override: read 'cid prio "
          "override', write 'CID PRIO' (0-40, higher is more urgent) or 'CID -' to clear",
          S.priorities, S.set_priority, parser=S.parse_priority, formatter=S.format_text),
    Entry("compute_time_us", "vgpu", RO, "compute busy time charged to this vGPU, us",
          lambda v: S.usage_us(v, "compute", "compute_s")),
    Entry("memory_time_us", "vgpu", RO, "copy-engine busy time charged to this vGPU, us",
          lambda v: S.usage_us(v, "memory", "copy_s")),
    Entry("wait_time_us", "vgpu", RO, "time this vGPU's contexts spent queued, us",
          S.wait_us),
    Entry("launches", "vgpu", RO, "launches completed by this vGPU's contexts",
          lambda v: S.usage_count(v, "launches")),
    Entry("copies", "vgpu", RO, "copies (engine and direct) completed by this vGPU's contexts",
          lambda v: S.usage_count(v, "copies")),
    Entry("bytes_copied", "vgpu", RO, "bytes copied by this vGPU's contexts (every path)",
          S.bytes_copied),
    Entry("slice_us", "global", RW, "running kernels yield the engine after this long when "
          "another context waits, us; 0: never (non-preemptive, as in the paper)",
          S.get_slice, S.set_slice, (0, 10_000)),
    Entry("kernel_time_max_ms", "global", RW, "tenants' kernels running longer are killed "
          "(ETIME, CUDA_ERROR_LAUNCH_TIMEOUT), ms; 0: no limit", S.get_time_max,
          S.set_time_max, (0, 86_400_000)),
    Entry("watchdog_ms", "vgpu", RW, "kernels of this vGPU running longer are killed (ETIME), "
          "ms; 0: off", lambda v: v.watchdog_ms, _set_attr("watchdog_ms"), (0, 86_400_000)),
    Entry("preemptions", "vgpu", RO, "running launches of this vGPU asked to yield the engine",
          lambda v: S.usage_count(v, "preemptions")),
    Entry("timeouts", "vgpu", RO, "launches of this vGPU killed by a time limit",
          lambda v: S.usage_count(v, "timeouts")),
    Entry("guest", "vgpu", RW, "1: every context of this vGPU is a guest (runs only in the "
          "hosts' idle cycles)", lambda v: v.guest, _set_attr("guest"), (0, 1)),
    Entry("guests", "global", RW, "guest class per context: read 'cid guest override', write "
          "'CID 1', 'CID 0' or 'CID -' (SCHED_IDLE openers are guests)", G.guests, G.set_guest,
          parser=G.parse_guest, formatter=S.format_text),
    Entry("guest_mode", "global", RO, "per GPU: the guests' mode (periodic or continuous), "
          "transitions, and the last ones", G.modes, formatter=S.format_text),
    Entry("guest_freq", "global", RW, "F: periods per second of the guests' periodic mode",
          *G.knob("freq", 1), (1, 1000)),
    Entry("guest_piece_us", "global", RW, "P: guests' engine time per period in periodic mode, "
          "us", *G.knob("piece_s", 1e6), (100, 1_000_000)),
    Entry("guest_mem_threshold", "global", RW, "hosts holding more device memory than this "
          "(bytes) keep the guests periodic", *G.knob("mem_threshold", 1), (0, 1 << 40)),
)

# The PTX engine (gdevd/gpu/ptx/jit, docs/ptx-engine.md); helpers in procfs/engine.py.
ENTRIES += (
    Entry("ptx_engine", "global", RW, "kernel engine: auto (compile in the background, "
          "interpret until ready), jit (compile first) or interp (never compile)",
          X.get_engine, X.set_engine, parser=S.parse_word, formatter=S.format_word),
    Entry("ptx_modules", "global", RO, "decoded modules: gpu, name, engine status "
          "(interp, compiling, jit, failed), compile seconds, kernels compiled, kernels",
          X.modules, formatter=S.format_text),
)

GLOBAL = tuple(e for e in ENTRIES if e.scope == "global")
PER_VGPU = tuple(e for e in ENTRIES if e.scope == "vgpu")


# --- in-daemon modules ------------------------------------------------------------------------
# ``/proc/gdev/modules`` (scope "control": the FUSE front adds it with the module registry as
# its target, and serves writes with ``registry.control``: ``load SPEC`` / ``unload NAME``).
# Per-module entries (scope "module") live in ``/proc/gdev/NAME/`` while module NAME is loaded;
# their target is the module object.


@dataclass(frozen=True)
class TextEntry(Entry):
    """An entry whose value is a line (or lines) of text; ``choices`` bounds writes."""

    choices: tuple[str, ...] = ()

    def parse(self, data: bytes) -> Any:
        """The written text, stripped; EINVAL if it is not UTF-8."""
        try:
            return data.decode().strip()
        except UnicodeDecodeError:
            raise GdevError(errno.EINVAL, f"{self.name}: not UTF-8") from None

    def validate(self, value: Any) -> None:
        """EINVAL unless ``value`` is one of ``choices`` (when there are choices)."""
        if self.choices and value not in self.choices:
            raise GdevError(errno.EINVAL, f"{self.name}: {value!r} not in {self.choices}")

    def format(self, value: Any) -> bytes:
        """The text, newline-terminated."""
        text = str(value)
        return (text if text.endswith("\n") else text + "\n").encode()


def _must_go_through_registry(registry: Any, value: Any) -> None:  # pragma: no cover
    raise GdevError(errno.EINVAL, "modules: written through the FUSE front only")


MODULES = TextEntry(
    "modules", "control", RW,
    "loaded modules (name kind state users contexts options); root writes "
    "'load KIND:key=value,...' or 'unload NAME'",
    lambda registry: registry.render(), _must_go_through_registry)


def _requests(path: str) -> Callable[[Any], int]:
    return lambda m: m.stat("requests", path)


def _bytes(path: str) -> Callable[[Any], int]:
    return lambda m: m.stat("bytes", path)


ECRYPTFS_ENTRIES: tuple[Entry, ...] = (
    Entry("cpu_threshold", "module", RW, "requests below this many bytes take the CPU path",
          lambda m: m.threshold, lambda m, v: m.set_threshold(v), (0, 1 << 30)),
    Entry("priority", "module", RW, "priority of the module's GPU context, 0..40 (larger first)",
          lambda m: m.priority, lambda m, v: setattr(m, "priority", v), (0, 40)),
    TextEntry("cipher", "module", RO, "path of large requests: gpu (kcuda), helper or cpu",
              lambda m: m.cipher),
    TextEntry("last_path", "module", RO, "path the last request took: cpu, gpu, helper, none",
              lambda m: m.last_path),
    Entry("open_files", "module", RO, "open files (unload is refused while nonzero)",
          lambda m: m.busy()),
    *(Entry(f"{kind}_{path}", "module", RO, f"{kind} done on the {path} path",
            (_requests if kind == "requests" else _bytes)(path))
      for kind in ("requests", "bytes") for path in ("cpu", "gpu", "helper")),
)

MODULE_ENTRIES: dict[str, tuple[Entry, ...]] = {"ecryptfs": ECRYPTFS_ENTRIES}
