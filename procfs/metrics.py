"""``/proc/gdev/metrics``: the per-vGPU and per-context figures in Prometheus' text format.

The exposition format (version 0.0.4): per metric family one ``# HELP`` and one ``# TYPE``
line, then its samples ``name{label="value",...} number``, families contiguous, label values
escaped (backslash, double quote, newline).  Counters end in ``_total``; units are base
units (bytes, seconds).  node_exporter's textfile collector takes the file as is
(``cat MOUNT/proc/gdev/metrics > DIR/gdev.prom``), and so does a scrape of
``gdev-smi --prometheus``.

Per-vGPU figures come from the runtime's ``VgpuStats`` records (as ``vdN/*``); every other
numeric ``vdN`` entry of the procfs table (a period, a watchdog's kill count, whatever a later
change declares) appears as an untyped ``gdev_vgpu_proc_NAME`` family with the entry's help,
so no figure of the tree is missing here.  Per-context figures come from its ``ContextStats``
records, as ``contexts`` shows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gdevd import __version__
from gdevd.runtime import stats as R

Labels = dict[str, str]
Sample = tuple[Labels, float]
V = R.VgpuStats
Ctx = R.ContextStats


def escape(value: str) -> str:
    """A label value escaped as the format asks."""
    return value.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def family(name: str, kind: str, help_: str, samples: Iterable[Sample]) -> list[str]:
    """The lines of one metric family (HELP, TYPE, then one line per sample)."""
    lines = [f"# HELP {name} {help_}", f"# TYPE {name} {kind}"]
    for labels, value in samples:
        text = ",".join(f'{k}="{escape(v)}"' for k, v in labels.items())
        number = repr(float(value)) if isinstance(value, float) else str(int(value))
        lines.append(f"{name}{{{text}}} {number}" if text else f"{name} {number}")
    return lines


# Per vGPU: (metric, type, help, getter of its VgpuStats).  Names follow Prometheus' rules.
VGPU_METRICS: tuple[tuple[str, str, str, Callable[[V], float]], ...] = (
    ("compute_share_percent", "gauge", "compute share of the physical GPU",
     lambda v: v.shares.compute_bandwidth),
    ("copy_share_percent", "gauge", "copy-engine share of the physical GPU",
     lambda v: v.shares.memory_bandwidth),
    ("memory_share_percent", "gauge", "device memory share of the physical GPU",
     lambda v: v.shares.memory_share),
    ("compute_utilisation_percent", "gauge", "compute utilisation over util_window_us",
     lambda v: v.usage.compute_bandwidth_used),
    ("copy_utilisation_percent", "gauge", "copy-engine utilisation over util_window_us",
     lambda v: v.usage.memory_bandwidth_used),
    ("memory_used_bytes", "gauge", "device memory charged to the vGPU",
     lambda v: v.shares.memory_used),
    ("memory_size_bytes", "gauge", "device memory the vGPU may use",
     lambda v: v.shares.memory_size),
    ("swapped_bytes", "gauge", "bytes of the vGPU now in swap",
     lambda v: v.swap.swapped_bytes),
    ("contexts", "gauge", "open contexts", lambda v: v.shares.contexts),
    ("compute_seconds_total", "counter", "compute busy time",
     lambda v: v.usage.compute_time_us / 1e6),
    ("copy_seconds_total", "counter", "copy-engine busy time",
     lambda v: v.usage.memory_time_us / 1e6),
    ("wait_seconds_total", "counter", "time the contexts spent queued",
     lambda v: v.usage.wait_time_us / 1e6),
    ("launches_total", "counter", "launches completed", lambda v: v.usage.launches),
    ("copies_total", "counter", "copies completed", lambda v: v.usage.copies),
    ("copied_bytes_total", "counter", "bytes copied, every path",
     lambda v: v.usage.bytes_copied),
    ("swap_out_bytes_total", "counter", "bytes swapped out", lambda v: v.swap.swap_out_bytes),
    ("swap_outs_total", "counter", "evictions", lambda v: v.swap.swap_out_count),
    ("swap_in_bytes_total", "counter", "bytes swapped back in",
     lambda v: v.swap.swap_in_bytes),
    ("swap_ins_total", "counter", "swap-ins", lambda v: v.swap.swap_in_count),
)

# The vdN entries whose figures VGPU_METRICS already carries (under Prometheus' names).
COVERED = {"compute_bandwidth", "memory_bandwidth", "memory_share", "compute_bandwidth_used",
           "memory_bandwidth_used", "memory_used", "memory_size", "swapped_bytes",
           "compute_time_us", "memory_time_us", "wait_time_us", "launches", "copies",
           "bytes_copied", "swap_out_bytes", "swap_out_count", "swap_in_bytes", "swap_in_count"}

# Per context: (metric, type, help, getter of its ContextStats).
CONTEXT_METRICS: tuple[tuple[str, str, str, Callable[[Ctx], float]], ...] = (
    ("priority", "gauge", "effective priority, 0-40 (larger first)", lambda c: c.prio),
    ("memory_bytes", "gauge", "device memory allocated", lambda c: c.memory),
    ("resident_bytes", "gauge", "bytes of its device blocks resident", lambda c: c.resident),
    ("swapped_bytes", "gauge", "bytes of its device blocks in swap", lambda c: c.swapped),
    ("faulted", "gauge", "1 once a kernel fault or engine error made the context unusable",
     lambda c: int(c.faulted)),
    ("compute_seconds_total", "counter", "compute busy time", lambda c: c.compute_s),
    ("copy_seconds_total", "counter", "copy-engine busy time", lambda c: c.copy_s),
    ("wait_seconds_total", "counter", "time spent queued", lambda c: c.wait_s),
    ("launches_total", "counter", "launches completed", lambda c: c.launches),
    ("copies_total", "counter", "copies completed", lambda c: c.copies),
    ("copied_bytes_total", "counter", "bytes copied", lambda c: c.bytes_copied),
    ("swap_out_bytes_total", "counter", "bytes swapped out", lambda c: c.swap_out_bytes),
    ("swap_in_bytes_total", "counter", "bytes swapped in", lambda c: c.swap_in_bytes),
)


def _vgpu_labels(v: V) -> Labels:
    return {"gpu": str(v.shares.gpu), "vgpu": str(v.shares.minor)}


def _context_labels(c: Ctx) -> Labels:
    return {"cid": str(c.cid), "pid": str(c.pid), "uid": str(c.uid), "name": c.name,
            "vgpu": str(c.vgpu)}


def render(system: R.System) -> str:
    """The whole exposition: an info line, the swap areas, every vGPU and every context."""
    sched, sys_ = R.scheduler_stats(system), R.system_stats(system)
    lines = family("gdev_info", "gauge", "gdevd version and scheduler (value 1)",
                   [({"version": __version__, "scheduler": sched.policy,
                      "queueing": sched.queueing}, 1)])
    for attr, value in (("device_size", sys_.swap_size), ("device_used", sys_.swap_used),
                        ("host_used", sys_.host_swap_used)):
        lines += family(f"gdev_swap_{attr}_bytes", "gauge", f"swap areas' {attr}, all GPUs",
                        [({}, value)])
    vgpus = [R.vgpu_stats(v) for v in R.vgpus(system)]
    for name, kind, help_, get in VGPU_METRICS:
        lines += family(f"gdev_vgpu_{name}", kind, help_,
                        [(_vgpu_labels(v), get(v)) for v in vgpus])
    lines += _other_entries(system, vgpus)
    ctxs = R.context_stats(system)
    for name, kind, help_, cget in CONTEXT_METRICS:
        lines += family(f"gdev_context_{name}", kind, help_,
                        [(_context_labels(c), cget(c)) for c in ctxs])
    return "\n".join(lines) + "\n"


def _other_entries(system: R.System, stats: list[V]) -> list[str]:
    """The numeric vdN entries not in :data:`COVERED`, as untyped families."""
    from procfs.table import PER_VGPU  # the table imports this module

    lines: list[str] = []
    targets = R.vgpus(system)
    for entry in PER_VGPU:
        if entry.name in COVERED or not targets:
            continue
        values = [entry.get(v) for v in targets]
        if all(isinstance(x, int) and not isinstance(x, bool) for x in values):
            lines += family(f"gdev_vgpu_proc_{entry.name}", "untyped",
                            f"/proc/gdev/vdN/{entry.name}: {entry.help}",
                            [(_vgpu_labels(v), x) for v, x in zip(stats, values, strict=True)])
    return lines
