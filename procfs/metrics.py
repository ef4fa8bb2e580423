"""``/proc/gdev/metrics``: the per-vGPU and per-context figures in Prometheus' text format.

The exposition format (version 0.0.4): per metric family one ``# HELP`` and one ``# TYPE``
line, then its samples ``name{label="value",...} number``, families contiguous, label values
escaped (backslash, double quote, newline).  Counters end in ``_total``; units are base
units (bytes, seconds).  node_exporter's textfile collector takes the file as is
(``cat MOUNT/proc/gdev/metrics > DIR/gdev.prom``), and so does a scrape of
``gdev-smi --prometheus``.

Per-vGPU figures come from the vGPU records behind ``vdN/*``; every other numeric ``vdN``
entry of the procfs table (a period, a watchdog's kill count, whatever a later change
declares) appears as an untyped ``gdev_vgpu_proc_NAME`` family with the entry's help, so no
figure of the tree is missing here.  Per-context figures come from the scheduler's usage
records, as ``contexts`` shows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import trio

from gdevd import __version__
from procfs import sched as S

Labels = dict[str, str]
Sample = tuple[Labels, float]


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


# Per vGPU: (metric, type, help, getter of the VirtualGpu).  Names follow Prometheus' rules.
VGPU_METRICS: tuple[tuple[str, str, str, Callable[[Any], float]], ...] = (
    ("compute_share_percent", "gauge", "compute share of the physical GPU",
     lambda v: v.compute_bandwidth),
    ("copy_share_percent", "gauge", "copy-engine share of the physical GPU",
     lambda v: v.memory_bandwidth),
    ("memory_share_percent", "gauge", "device memory share of the physical GPU",
     lambda v: v.memory_share),
    ("compute_utilisation_percent", "gauge", "compute utilisation over util_window_us",
     lambda v: v.compute_bandwidth_used),
    ("copy_utilisation_percent", "gauge", "copy-engine utilisation over util_window_us",
     lambda v: v.memory_bandwidth_used),
    ("memory_used_bytes", "gauge", "device memory charged to the vGPU",
     lambda v: v.memory_used),
    ("memory_size_bytes", "gauge", "device memory the vGPU may use", lambda v: v.memory_size),
    ("swapped_bytes", "gauge", "bytes of the vGPU now in swap",
     lambda v: v.swap.swapped_bytes),
    ("contexts", "gauge", "open contexts", lambda v: len(v.handles)),
    ("compute_seconds_total", "counter", "compute busy time",
     lambda v: S.usage_us(v, "compute", "compute_s") / 1e6),
    ("copy_seconds_total", "counter", "copy-engine busy time",
     lambda v: S.usage_us(v, "memory", "copy_s") / 1e6),
    ("wait_seconds_total", "counter", "time the contexts spent queued",
     lambda v: S.wait_us(v) / 1e6),
    ("launches_total", "counter", "launches completed", lambda v: S.usage_count(v, "launches")),
    ("copies_total", "counter", "copies completed", lambda v: S.usage_count(v, "copies")),
    ("copied_bytes_total", "counter", "bytes copied, every path", S.bytes_copied),
    ("swap_out_bytes_total", "counter", "bytes swapped out", lambda v: v.swap.swap_out_bytes),
    ("swap_outs_total", "counter", "evictions", lambda v: v.swap.swap_out_count),
    ("swap_in_bytes_total", "counter", "bytes swapped back in", lambda v: v.swap.swap_in_bytes),
    ("swap_ins_total", "counter", "swap-ins", lambda v: v.swap.swap_in_count),
)

# The vdN entries whose figures VGPU_METRICS already carries (under Prometheus' names).
COVERED = {"compute_bandwidth", "memory_bandwidth", "memory_share", "compute_bandwidth_used",
           "memory_bandwidth_used", "memory_used", "memory_size", "swapped_bytes",
           "compute_time_us", "memory_time_us", "wait_time_us", "launches", "copies",
           "bytes_copied", "swap_out_bytes", "swap_out_count", "swap_in_bytes", "swap_in_count"}

# Per context: (metric, type, help, getter of (handle, entity, (resident, swapped), now)).
CONTEXT_METRICS: tuple[tuple[str, str, str, Callable[..., float]], ...] = (
    ("priority", "gauge", "effective priority, 0-40 (larger first)",
     lambda h, se, r, now: se.prio.effective(now)),
    ("memory_bytes", "gauge", "device memory allocated", lambda h, se, r, now:
     S.device_bytes(h)),
    ("resident_bytes", "gauge", "bytes of its device blocks resident", lambda h, se, r, now:
     r[0]),
    ("swapped_bytes", "gauge", "bytes of its device blocks in swap", lambda h, se, r, now: r[1]),
    ("faulted", "gauge", "1 once a kernel fault or engine error made the context unusable",
     lambda h, se, r, now: int(h.fault is not None)),
    ("compute_seconds_total", "counter", "compute busy time",
     lambda h, se, r, now: se.usage.compute_s),
    ("copy_seconds_total", "counter", "copy-engine busy time",
     lambda h, se, r, now: se.usage.copy_s),
    ("wait_seconds_total", "counter", "time spent queued", lambda h, se, r, now:
     se.usage.wait_s),
    ("launches_total", "counter", "launches completed", lambda h, se, r, now:
     se.usage.launches),
    ("copies_total", "counter", "copies completed", lambda h, se, r, now: se.usage.copies),
    ("copied_bytes_total", "counter", "bytes copied", lambda h, se, r, now:
     se.usage.bytes_copied),
    ("swap_out_bytes_total", "counter", "bytes swapped out", lambda h, se, r, now:
     h.counters.swap.swap_out_bytes),
    ("swap_in_bytes_total", "counter", "bytes swapped in", lambda h, se, r, now:
     h.counters.swap.swap_in_bytes),
)


def _vgpu_labels(v: Any) -> Labels:
    return {"gpu": str(v.phys.index), "vgpu": str(v.minor)}


def _context_labels(h: Any) -> Labels:
    return {"cid": str(h.cid), "pid": str(h.cred.pid), "uid": str(h.cred.uid),
            "name": h.cred.name, "vgpu": str(h.vgpu.minor)}


def render(system: Any) -> str:
    """The whole exposition: an info line, the swap areas, every vGPU and every context."""
    lines = family("gdev_info", "gauge", "gdevd version and scheduler (value 1)",
                   [({"version": __version__, "scheduler": S.get_policy(system),
                      "queueing": S.get_queueing(system)}, 1)])
    for attr in ("device_size", "device_used", "host_used"):
        lines += family(f"gdev_swap_{attr}_bytes", "gauge", f"swap areas' {attr}, all GPUs",
                        [({}, sum(getattr(g.swap, attr) for g in system.gpus))])
    for name, kind, help_, get in VGPU_METRICS:
        lines += family(f"gdev_vgpu_{name}", kind, help_,
                        [(_vgpu_labels(v), get(v)) for v in system.virtual])
    lines += _other_entries(system)
    now, owned = trio.current_time(), S.residency(system)
    entities = system.scheduler.entities()
    for name, kind, help_, get in CONTEXT_METRICS:
        lines += family(f"gdev_context_{name}", kind, help_,
                        [(_context_labels(h), get(h, se, owned.get(h.cid, (0, 0)), now))
                         for h, se in entities])
    return "\n".join(lines) + "\n"


def _other_entries(system: Any) -> list[str]:
    """The numeric vdN entries not in :data:`COVERED`, as untyped families."""
    from procfs.table import PER_VGPU  # the table imports this module

    lines: list[str] = []
    for entry in PER_VGPU:
        if entry.name in COVERED or not system.virtual:
            continue
        values = [entry.get(v) for v in system.virtual]
        if all(isinstance(x, int) and not isinstance(x, bool) for x in values):
            lines += family(f"gdev_vgpu_proc_{entry.name}", "untyped",
                            f"/proc/gdev/vdN/{entry.name}: {entry.help}",
                            [(_vgpu_labels(v), x) for v, x in zip(system.virtual, values,
                                                                  strict=True)])
    return lines
