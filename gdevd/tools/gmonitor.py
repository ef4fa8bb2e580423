"""gmonitor: per-vGPU utilisation of a running gdevd, as a refreshing table.

Like the original's ``tools/gmonitor`` (and the usched monitor's table), it reads only
``MOUNT/proc/gdev`` (so any user may run it)::

    gmonitor [--mount MOUNT] [--interval 1.0] [--count N]

Each refresh prints the policy and queueing mode, per physical GPU its vGPUs and the
guests' mode (periodic or continuous); per vGPU its physical GPU, open contexts, compute
and copy-engine utilisation against their bandwidth shares (``used/share %``, measured over
``util_window_us``), busy times, launches, copies, time its contexts spent queued, and
device memory used/size; then the open contexts (process name, vGPU, class: ``guest`` or
``host``, priority, memory, times and counts).  Numbers
are shortened (``1234k``) so that every line fits 80 columns.
On a terminal the screen is cleared before each refresh.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from gdevd.tools import procread
from gdevd.tools.units import count, id_list, seconds

COLUMNS = ("vgpu", "gpu", "ctx", "compute", "copy", "compute_s", "copy_s", "launch", "copies",
           "wait_s", "used/size")
WIDTH = 80


def _mib(n: int) -> str:
    return f"{n / (1 << 30):.0f}G" if n >= 10 << 30 else f"{n / (1 << 20):.0f}M"


def snapshot(proc: str) -> list[tuple[str, ...]]:
    """One row per vGPU (the :data:`COLUMNS`), read from the proc directory ``proc``."""
    snap = procread.snapshot(proc)
    return [_row(v, snap["processes"]) for v in snap["vgpus"]]


def _row(v: dict[str, Any], processes: list[dict[str, Any]]) -> tuple[str, ...]:
    ctx = sum(p["vgpu"] == v["minor"] for p in processes)
    return (str(v["minor"]), str(v["phys"]), str(ctx),
            f"{v['compute_bandwidth_used']}/{v['compute_bandwidth']}%",
            f"{v['memory_bandwidth_used']}/{v['memory_bandwidth']}%",
            seconds(v["compute_time_us"] / 1e6), seconds(v["memory_time_us"] / 1e6),
            count(v["launches"]), count(v["copies"]), seconds(v["wait_time_us"] / 1e6),
            f"{_mib(v['memory_used'])}/{_mib(v['memory_size'])}")


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    return [" ".join(cell.rjust(w) for cell, w in zip(r, widths, strict=True)) for r in rows]


def _contexts(processes: list[dict[str, Any]]) -> list[str]:
    rows: list[tuple[str, ...]] = [("cid", "pid", "name", "vd", "mode", "prio", "memory",
                                    "comp_s", "copy_s", "launch", "copies", "wait_s")]
    rows += [(str(p["cid"]), str(p["pid"]), str(p.get("name", "-"))[:10], str(p["vgpu"]),
              "guest" if p.get("guest") == 1 else "host", str(p["prio"]), _mib(p["memory"]),
              seconds(p["compute_ms"] / 1e3), seconds(p["copy_ms"] / 1e3),
              count(p["launches"]), count(p["copies"]), seconds(p["wait_ms"] / 1e3))
             for p in processes]
    return _table(rows)


def _gpus(gpus: list[dict[str, Any]]) -> list[str]:
    """Per GPU: its vGPUs and the guests' mode."""
    return [f"gpu{g['index']}: vGPUs {id_list(g['vgpus'])}, guests "
            f"{g.get('guest_mode', '-')} ({g.get('guest_transitions', 0)} transitions)"
            for g in gpus]


def _fit(line: str) -> str:
    """The line, or its first 79 columns and ``>`` when it is longer than 80."""
    return line if len(line) <= WIDTH else line[:WIDTH - 1] + ">"


def render(proc: str) -> str:
    """The whole screen for one refresh; no line longer than 80 columns."""
    snap = procread.snapshot(proc)
    rows = [COLUMNS, *(_row(v, snap["processes"]) for v in snap["vgpus"])]
    window = snap["util_window_us"] / 1e6
    head = (f"gdev: scheduler {snap['scheduler']}, queueing {snap['queueing']}, "
            f"utilisation over {window:g} s")
    lines = [head, *_gpus(snap["gpus"]), "", *_table(rows), "", *_contexts(snap["processes"])]
    return "\n".join(_fit(line) for line in lines)


def monitor(proc: str, interval: float, count: int, out: TextIO,
            sleep: Callable[[float], None] = time.sleep) -> None:
    """Print ``count`` refreshes (0: until interrupted) ``interval`` seconds apart."""
    clear = "\x1b[H\x1b[2J" if out.isatty() else ""
    n = 0
    while True:
        out.write(clear + render(proc) + "\n")
        out.flush()
        n += 1
        if count and n >= count:
            return
        sleep(interval)


def main(argv: list[str] | None = None) -> int:
    """The ``gmonitor`` console script; exit status 1 if the tree cannot be read."""
    p = argparse.ArgumentParser(prog="gmonitor", description=__doc__.splitlines()[0])
    p.add_argument("--mount", help="gdevd mount point (default: $GDEV_MOUNT)")
    p.add_argument("--interval", type=float, default=1.0, help="seconds between refreshes")
    p.add_argument("--count", type=int, default=0, help="refreshes, then exit (0: forever)")
    args = p.parse_args(argv)
    if args.interval <= 0 or args.count < 0:
        p.error("--interval must be > 0 and --count >= 0")
    proc = procread.proc_dir(args.mount)
    try:
        monitor(proc, args.interval, args.count, sys.stdout)
    except KeyboardInterrupt:
        return 0
    except OSError as e:
        print(f"gmonitor: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
