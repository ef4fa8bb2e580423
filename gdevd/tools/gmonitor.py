"""gmonitor: per-vGPU utilisation of a running gdevd, as a refreshing table.

Like the original's ``tools/gmonitor`` (and the usched monitor's table), it reads only
``MOUNT/proc/gdev`` (so any user may run it)::

    gmonitor [--mount MOUNT] [--interval 1.0] [--count N]

Each refresh prints, per vGPU: its physical GPU, open contexts, compute and copy-engine
utilisation against their bandwidth shares (``used/share %``, measured over
``util_window_us``), busy times, launches, copies, time its contexts spent queued, and
device memory used/size; then the policy, queueing mode and the context table.
On a terminal the screen is cleared before each refresh.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import TextIO

COLUMNS = ("vgpu", "phys", "ctx", "compute", "memory", "compute_s", "memory_s",
           "launches", "copies", "wait_s", "mem_used/size")


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _int(proc: str, *parts: str) -> int:
    return int(_read(os.path.join(proc, *parts)).strip())


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.0f}M"


def snapshot(proc: str) -> list[tuple[str, ...]]:
    """One row per vGPU (the :data:`COLUMNS`), read from the proc directory ``proc``."""
    contexts = _read(os.path.join(proc, "contexts")).splitlines()[1:]
    users: dict[str, int] = {}
    for line in contexts:
        vd = line.split()[2]
        users[vd] = users.get(vd, 0) + 1
    rows: list[tuple[str, ...]] = []
    for i in range(_int(proc, "virtual_device_count")):
        vd = f"vd{i}"

        def get(name: str, vd: str = vd) -> int:
            return _int(proc, vd, name)
        rows.append((
            str(i), str(get("phys")), str(users.get(str(i), 0)),
            f"{get('compute_bandwidth_used')}/{get('compute_bandwidth')}%",
            f"{get('memory_bandwidth_used')}/{get('memory_bandwidth')}%",
            f"{get('compute_time_us') / 1e6:.2f}", f"{get('memory_time_us') / 1e6:.2f}",
            str(get("launches")), str(get("copies")), f"{get('wait_time_us') / 1e6:.2f}",
            f"{_mib(get('memory_used'))}/{_mib(get('memory_size'))}"))
    return rows


def render(proc: str) -> str:
    """The whole screen for one refresh."""
    rows = [COLUMNS, *snapshot(proc)]
    widths = [max(len(r[c]) for r in rows) for c in range(len(COLUMNS))]
    lines = ["  ".join(cell.rjust(w) for cell, w in zip(r, widths, strict=True)) for r in rows]
    policy = _read(os.path.join(proc, "scheduler")).strip()
    queueing = _read(os.path.join(proc, "queueing")).strip()
    window = _int(proc, "util_window_us") / 1e6
    head = f"gdev: scheduler {policy}, queueing {queueing}, utilisation over {window:g} s"
    return "\n".join([head, "", *lines, "", _read(os.path.join(proc, "contexts")).rstrip()])


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
    from libgdev.gate import mount_point

    p = argparse.ArgumentParser(prog="gmonitor", description=__doc__.splitlines()[0])
    p.add_argument("--mount", help="gdevd mount point (default: $GDEV_MOUNT)")
    p.add_argument("--interval", type=float, default=1.0, help="seconds between refreshes")
    p.add_argument("--count", type=int, default=0, help="refreshes, then exit (0: forever)")
    args = p.parse_args(argv)
    if args.interval <= 0 or args.count < 0:
        p.error("--interval must be > 0 and --count >= 0")
    proc = os.path.join(args.mount or mount_point(), "proc", "gdev")
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
