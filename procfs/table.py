"""The /proc/gdev tree, declared once: Gdev's entries (``mod/gdev/gdev_proc.c``) plus ours.

Each :class:`~procfs.entry.Entry` says where it lives, its mode, how to parse, validate and
format a value, how to get and set it, and what it means.  ``scope`` is ``"global"``
(``/proc/gdev/NAME``, the getter receives the system) or ``"vgpu"`` (``/proc/gdev/vdN/NAME``,
the getter receives the vGPU).  Getters read the runtime's statistics records, setters are
the runtime's validated setters, bounds come from ``gdevd.runtime.defaults.BOUNDS``; nothing
here reaches into the runtime's objects.  :mod:`procfs.generic` does every read and write
from this table; the FUSE tree builds its inodes from it.  In-daemon modules declare their
own entries (``/proc/gdev/NAME/``) with the module (``gdevd.modules.registry``).

Gdev prints ``"%u"`` without a newline and accepts any write (restoring out-of-range values
yet reporting success).  We print a newline and refuse a bad write with EINVAL, changing
nothing.  Changing ``memory_share`` changes that vGPU's ``memory_size`` at once, on a live
system: when the share shrinks below ``memory_used`` the excess is swapped out in the
background (docs/memory.md), so nothing is lost.  Text entries (``shm``, ``contexts``) are
tables.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from typing import Any

from gdevd.errors import GdevError
from gdevd.runtime import defaults as D
from gdevd.runtime import stats as R
from gdevd.runtime import tunables as T
from procfs import metrics as M
from procfs import sched as S
from procfs.entry import (
    RO,
    RW,
    Entry,
    TextEntry,
    bounds,
    format_choices,
    format_text,
    format_word,
    parse_choice,
    parse_multiple,
)


def _vgpu(field: str) -> Callable[[R.Vgpu], Any]:
    """The getter of one figure of a vGPU, from the record that holds it
    (:class:`~gdevd.runtime.stats.VgpuShares`, ``VgpuSwap`` or ``VgpuUsage``)."""
    snapshot = R.VGPU_FIELDS[field]
    return lambda v: getattr(snapshot(v), field)


def _system(field: str) -> Callable[[R.System], Any]:
    """The getter of one field of the system's :class:`~gdevd.runtime.stats.SystemStats`."""
    return lambda s: getattr(R.system_stats(s), field)


def _share(attr: str) -> Callable[[R.Vgpu, int], None]:
    return lambda v, value: T.set_share(v, attr, value)


def _copy(name: str) -> Callable[[R.System, int], None]:
    return lambda s, value: T.set_copy_tunable(s, name, value)


def _tunable(name: str, help_: str, setter: Callable[[Any, int], None],
             scope: str = "global") -> Entry:
    """A writable numeric entry whose bounds are ``BOUNDS[name]``."""
    get = _system(name) if scope == "global" else _vgpu(name)
    return Entry(name, scope, RW, help_, get, setter, bounds(name))


ENTRIES: tuple[Entry, ...] = (
    Entry("device_count", "global", RO, "number of physical GPUs", _system("device_count")),
    Entry("virtual_device_count", "global", RO, "number of virtual GPUs (/dev/gdevN files)",
          _system("virtual_device_count")),
    _tunable("compute_bandwidth", "compute share of the physical GPU, percent (the vGPUs of "
             "one GPU total at most 100)", _share("compute_bandwidth"), "vgpu"),
    _tunable("memory_bandwidth", "copy-engine share of the physical GPU, percent (the vGPUs "
             "of one GPU total at most 100)", _share("memory_bandwidth"), "vgpu"),
    _tunable("memory_share", "device memory share of the physical GPU outside its temporal "
             "swap area, percent (may total over 100: swap backs the excess, see "
             "memory_overcommit)", T.set_memory_share, "vgpu"),
    Entry("memory_overcommit", "vgpu", RO, "percent by which the memory shares of this "
          "vGPU's physical GPU total over 100 (0: not overcommitted)",
          _vgpu("memory_overcommit")),
    Entry("period", "vgpu", RW, "budget period of the vGPU scheduler, microseconds",
          _vgpu("period_us"), T.set_period, bounds("period")),
    Entry("compute_bandwidth_used", "vgpu", RO,
          "measured compute utilisation over util_window_us, percent",
          _vgpu("compute_bandwidth_used")),
    Entry("memory_bandwidth_used", "vgpu", RO,
          "measured copy-engine utilisation over util_window_us, percent",
          _vgpu("memory_bandwidth_used")),
    Entry("phys", "vgpu", RO, "index of the physical GPU this vGPU runs on", _vgpu("gpu")),
    Entry("memory_size", "vgpu", RO, "device memory this vGPU may use, bytes",
          _vgpu("memory_size")),
    Entry("memory_used", "vgpu", RO, "device memory charged to this vGPU, bytes",
          _vgpu("memory_used")),
    _tunable("swap_percent", "temporal device swap area, percent of each GPU's memory (0 "
             "disables it; EBUSY while it holds pages)", T.set_swap_percent),
    _tunable("ioctl_poll_us", "how long an ioctl connection busy-polls for its client's "
             "next request before sleeping, microseconds (0 turns it off)", T.set_ioctl_poll),
    Entry("swap_size", "global", RO, "bytes of device memory reserved for temporal swap",
          _system("swap_size")),
    Entry("swap_used", "global", RO, "bytes of the device swap areas holding evicted pages",
          _system("swap_used")),
    Entry("host_swap_size", "global", RO, "host swap limit, bytes",
          _system("host_swap_size")),
    Entry("host_swap_used", "global", RO, "bytes of evicted pages in host swap",
          _system("host_swap_used")),
    Entry("shm", "global", RO, "shared device memory segments (like /proc/sysvipc/shm)",
          R.shm_listing),
    Entry("limits", "global", RO, "per-tenant limits and each user's use of them "
          "(docs/security.md)", R.limits),
    Entry("host_swap_held", "vgpu", RO, "bytes of this vGPU's evicted pages in host swap "
          "(at most its memory_share of host_swap_size)", _vgpu("host_swap_held")),
    Entry("swap_out_bytes", "vgpu", RO, "bytes swapped out of this vGPU's memory",
          _vgpu("swap_out_bytes")),
    Entry("swap_out_count", "vgpu", RO, "evictions from this vGPU", _vgpu("swap_out_count")),
    Entry("swap_in_bytes", "vgpu", RO, "bytes swapped back in", _vgpu("swap_in_bytes")),
    Entry("swap_in_count", "vgpu", RO, "swap-ins", _vgpu("swap_in_count")),
    Entry("swapped_bytes", "vgpu", RO, "bytes of this vGPU now in swap",
          _vgpu("swapped_bytes")),
)

# The memcpy tunables (docs/memory.md; Gdev's gtune defaults and direct-I/O limits).
ENTRIES += (
    Entry("chunk_size", "global", RW, "memcpy chunk (bounce buffer) size of contexts opened "
          "from now on, bytes, a multiple of 4096 (gtune overrides it per context)",
          _system("chunk_size"), _copy("chunk_size"), bounds("chunk_size"),
          parser=parse_multiple("chunk_size", D.PAGE_SIZE)),
    _tunable("pipeline_count", "memcpy bounce buffers in flight of contexts opened from now "
             "on (1: chunked, 2-4: pipelined; gtune overrides it per context)",
             _copy("pipeline_count")),
    _tunable("iowrite_limit", "host-to-device copies up to this many bytes take direct I/O "
             "instead of the copy engine (every context's next copy)", _copy("iowrite_limit")),
    _tunable("ioread_limit", "device-to-host copies up to this many bytes take direct I/O "
             "instead of the copy engine (every context's next copy)", _copy("ioread_limit")),
    Entry("copy_paths", "global", RO, "per open context: cid, its chunk_size and "
          "pipeline_count, and its copies by path (direct pinned chunked pipelined device "
          "swap)", S.copy_paths, formatter=format_text),
)

# The scheduler's entries (gdevd/runtime/sched, docs/scheduling.md); helpers in procfs/sched.py.
ENTRIES += (
    Entry("scheduler", "global", RW, "vGPU policy: reads '[band] credit fifo null' (the "
          "current one in brackets, as Linux's I/O schedulers), write one name",
          S.get_policy, T.set_policy, parser=parse_choice("scheduler", R.POLICIES),
          formatter=format_choices(R.POLICIES)),
    Entry("queueing", "global", RW, "mrq (separate compute and copy queues) or sdq (one)",
          S.get_queueing, T.set_queueing, parser=parse_choice("queueing", R.QUEUEINGS),
          formatter=format_word),
    Entry("band_wait_us", "global", RW, "BAND time buffering, microseconds",
          *S.knob("band_wait_us"), bounds("band_wait_us")),
    Entry("util_window_us", "global", RW, "window of the *_bandwidth_used measurements, us",
          *S.knob("util_window_us"), bounds("util_window_us")),
    Entry("instances_max", "global", RW, "operations in flight per context per resource",
          *S.knob("instances_max"), bounds("instances_max")),
    Entry("contexts", "global", RO, "every open context: pid, vGPU, priority, memory, "
          "compute and copy time (ms), launches, copies, bytes copied, wait time (ms), "
          "resident and swapped bytes, swap-out and swap-in bytes and counts, the opener's uid "
          "and process name", S.contexts, formatter=format_text),
    Entry("metrics", "global", RO, "every vGPU's and context's figures in Prometheus' text "
          "format (node_exporter's textfile collector takes it as is)",
          M.render, formatter=format_text),
    Entry("priority", "global", RW, "per-context priority override: read 'cid prio "
          "override', write 'CID PRIO' (0-40, higher is more urgent) or 'CID -' to clear",
          S.priorities, S.set_priority, parser=S.parse_priority, formatter=format_text),
    Entry("compute_time_us", "vgpu", RO, "compute busy time charged to this vGPU, us",
          _vgpu("compute_time_us")),
    Entry("memory_time_us", "vgpu", RO, "copy-engine busy time charged to this vGPU, us",
          _vgpu("memory_time_us")),
    Entry("wait_time_us", "vgpu", RO, "time this vGPU's contexts spent queued, us",
          _vgpu("wait_time_us")),
    Entry("launches", "vgpu", RO, "launches completed by this vGPU's contexts",
          _vgpu("launches")),
    Entry("copies", "vgpu", RO, "copies (engine and direct) completed by this vGPU's contexts",
          _vgpu("copies")),
    Entry("bytes_copied", "vgpu", RO, "bytes copied by this vGPU's contexts (every path)",
          _vgpu("bytes_copied")),
    Entry("slice_us", "global", RW, "running kernels yield the engine after this long when "
          "another context waits, us; 0: never (non-preemptive, as in the paper)",
          *S.knob("slice_us"), bounds("slice_us")),
    Entry("kernel_time_max_ms", "global", RW, "tenants' kernels running longer are killed "
          "(ETIME, CUDA_ERROR_LAUNCH_TIMEOUT), ms; 0: no limit",
          *S.knob("kernel_time_max_ms"), bounds("kernel_time_max_ms")),
    _tunable("watchdog_ms", "kernels of this vGPU running longer are killed (ETIME), ms; 0: "
             "off", T.set_watchdog, "vgpu"),
    Entry("preemptions", "vgpu", RO, "running launches of this vGPU asked to yield the engine",
          _vgpu("preemptions")),
    Entry("timeouts", "vgpu", RO, "launches of this vGPU killed by a time limit",
          _vgpu("timeouts")),
    _tunable("guest", "1: every context of this vGPU is a guest (runs only in the hosts' "
             "idle cycles)", T.set_guest, "vgpu"),
    Entry("guests", "global", RW, "guest class per context: read 'cid guest override', write "
          "'CID 1', 'CID 0' or 'CID -' (SCHED_IDLE openers are guests)", S.guests,
          S.set_guest, parser=S.parse_guest, formatter=format_text),
    Entry("guest_mode", "global", RO, "per GPU: the guests' mode (periodic or continuous), "
          "transitions, and the last ones", S.guest_modes, formatter=format_text),
    Entry("guest_freq", "global", RW, "F: periods per second of the guests' periodic mode",
          *S.knob("guest_freq"), bounds("guest_freq")),
    Entry("guest_piece_us", "global", RW, "P: guests' engine time per period in periodic mode, "
          "us", *S.knob("guest_piece_us"), bounds("guest_piece_us")),
    Entry("guest_mem_threshold", "global", RW, "hosts holding more device memory than this "
          "(bytes) keep the guests periodic", *S.knob("guest_mem_threshold"),
          bounds("guest_mem_threshold")),
)

# The PTX engine (gdevd/gpu/ptx/jit, docs/ptx-engine.md).
ENTRIES += (
    Entry("ptx_engine", "global", RW, "kernel engine: auto (compile in the background, "
          "interpret until ready), jit (compile first) or interp (never compile)",
          _system("ptx_engine"), lambda s, name: T.set_engine(name),
          parser=parse_choice("engine", R.ENGINES), formatter=format_word),
    _tunable("ptx_compile_nice", "niceness of the background PTX compiler's processes "
             "(0 = as the daemon; higher leaves more CPU to running kernels)",
             T.set_compile_nice),
    _tunable("compute_nice", "how much nicer than the daemon the compute engines' threads "
             "run (0 = as the daemon; higher leaves the daemon's other work ahead of running "
             "kernels)", T.set_compute_nice),
    Entry("ptx_modules", "global", RO, "decoded modules: gpu, name, engine status "
          "(interp, compiling, jit, failed), compile seconds, kernels compiled, kernels",
          S.ptx_modules, formatter=format_text),
    Entry("ptx_interpreted", "global", RO, "kernels of compiled modules that stay on the "
          "interpreter: gpu, module, kernel, reason (e.g. instruction tex)",
          S.ptx_interpreted, formatter=format_text),
)



def describe(entries: tuple[Entry, ...]) -> str:
    """One line per entry: its path, ``ro`` or ``rw`` and bounds, and its help."""
    lines = []
    for e in entries:
        where = f"vdN/{e.name}" if e.scope == "vgpu" else e.name
        rule = "rw" if e.writable else "ro"
        if e.bounds is not None:
            rule += f" {e.bounds[0]}..{e.bounds[1]}"
        lines.append(f"{where} ({rule}): {e.help}")
    return "\n".join(lines) + "\n"


HELP = Entry("help", "global", RO, "every entry: path, ro or rw with its bounds, meaning "
             "(writes are root's; a refused write is logged by gdevd with why)",
             lambda system: describe(ENTRIES), formatter=format_text)
ENTRIES += (HELP,)
GLOBAL = tuple(e for e in ENTRIES if e.scope == "global")
PER_VGPU = tuple(e for e in ENTRIES if e.scope == "vgpu")


# ``/proc/gdev/modules`` (scope "control": the FUSE front adds it with the module registry as
# its target, and serves writes with ``registry.control``: ``load SPEC`` / ``unload NAME``).
def _must_go_through_registry(registry: Any, value: Any) -> None:  # pragma: no cover
    raise GdevError(errno.EINVAL, "modules: written through the FUSE front only")


MODULES = TextEntry(
    "modules", "control", RW,
    "loaded modules (name kind state users contexts options); root writes "
    "'load KIND:key=value,...' or 'unload NAME'",
    lambda registry: registry.render(), _must_go_through_registry)
