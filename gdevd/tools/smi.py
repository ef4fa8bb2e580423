"""gdev-smi: the state of a running gdevd, like nvidia-smi (and ipcs for shared segments).

It reads only ``MOUNT/proc/gdev`` (any user may run it)::

    gdev-smi [--mount MOUNT] [--json | --prometheus] [-l SECONDS] [--count N]

The text view fits 80 columns: a header (scheduler, queueing, window), per physical GPU
the totals of its vGPUs' shares (bandwidth shares never exceed 100 %, memory shares may,
swap backing the excess) and the guests' mode (periodic or continuous), one line per vGPU
(utilisation against its shares, memory used/size, swapped bytes, contexts, launches,
period, and MODE: ``guest`` when all its contexts are guests, else ``host``), the
processes holding contexts (pid, name, user, vGPU, memory, priority; ``--json`` adds their
guest class) and the shared segments.  ``--json`` prints the same record as JSON,
``--prometheus`` the tree's ``metrics`` file.  ``-l`` repeats every SECONDS.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from gdevd import __version__
from gdevd.tools.procread import proc_dir, read_text, snapshot
from gdevd.tools.units import count, duration_us, id_list, seconds, size

WIDTH = 80


def user_name(uid: int) -> str:
    """The login name of ``uid``, or the number."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _fit(line: str) -> str:
    line = line.rstrip()
    return line if len(line) <= WIDTH else line[:WIDTH - 1] + ">"


def _mode(v: dict[str, Any]) -> str:
    """``guest`` when every context of the vGPU is a guest (``vdN/guest``), else ``host``."""
    return "guest" if v.get("guest") == 1 else "host"


def gpu_lines(snap: dict[str, Any]) -> list[str]:
    """Per physical GPU: its vGPUs and the totals of their shares, then the guests' mode
    and any memory overcommit on a line of their own (so both fit 80 columns)."""
    lines = []
    for g in snap["gpus"]:
        lines.append(f"GPU {g['index']}: vGPUs {id_list(g['vgpus'])}  shares: "
                     f"compute {g['compute_bandwidth_total']}%  copy "
                     f"{g['memory_bandwidth_total']}%  memory {g['memory_share_total']}%")
        lines.append(f"  guests {g.get('guest_mode', '-')} ({g.get('guest_transitions', 0)} "
                     "transitions)")
        if (over := g["memory_share_total"] - 100) > 0:
            lines.append(f"  memory overcommitted by {over}%: swap backs it")
    return lines


def vgpu_lines(snap: dict[str, Any]) -> list[str]:
    """The vGPU table."""
    lines = [f"{'vGPU':>4} {'GPU':>3} {'COMPUTE':>8} {'COPY':>8} {'MEM USED/SIZE':>13} "
             f"{'SWAP':>6} {'CTX':>3} {'LAUNCHES':>8} {'PERIOD':>6} {'MODE':<8}"]
    for v in snap["vgpus"]:
        ctx = sum(p.get("vgpu") == v["minor"] for p in snap["processes"])
        used = f"{size(v.get('memory_used', 0))}/{size(v.get('memory_size', 0))}"
        lines.append(
            f"{v['minor']:>4} {v.get('phys', '-'):>3} "
            f"{v.get('compute_bandwidth_used', 0):>3}/{v.get('compute_bandwidth', 0):>3}% "
            f"{v.get('memory_bandwidth_used', 0):>3}/{v.get('memory_bandwidth', 0):>3}% "
            f"{used:>13} {size(v.get('swapped_bytes', 0)):>6} {ctx:>3} "
            f"{count(v.get('launches', 0)):>8} {duration_us(v.get('period', 0)):>6} "
            f"{_mode(v):<5}")
    return lines


def process_lines(snap: dict[str, Any]) -> list[str]:
    """The processes holding contexts, one line per context."""
    lines = [f"{'PID':>7} {'NAME':<14} {'USER':<9} {'vGPU':>4} {'CID':>4} {'PRIO':>4} "
             f"{'MEMORY':>6} {'SWAPPED':>7} {'COMPUTE':>8} {'LAUNCH':>7}"]
    for p in snap["processes"]:
        lines.append(
            f"{p['pid']:>7} {str(p.get('name', '-'))[:14]:<14} "
            f"{user_name(int(p.get('uid', -1)))[:9]:<9} {p['vgpu']:>4} {p['cid']:>4} "
            f"{p['prio']:>4} {size(p['memory']):>6} {size(p.get('swapped', 0)):>7} "
            f"{seconds(p['compute_ms'] / 1000):>7}s {count(p['launches']):>7}")
    return lines if snap["processes"] else [*lines, "  (no contexts open)"]


def shm_lines(snap: dict[str, Any]) -> list[str]:
    """The shared device memory segments, like ``ipcs -m``."""
    lines = [f"{'KEY':>10} {'SHMID':>10} {'OWNER':<10} {'PERMS':>5} {'SIZE':>7} "
             f"{'NATTCH':>6} {'RESIDENT':>8} {'vGPU':>4}"]
    for s in snap["shm"]:
        lines.append(f"{s['key']:>10} {s['shmid']:>10} {user_name(int(s['uid']))[:10]:<10} "
                     f"{s['perms']:>5} {size(s['size']):>7} {s['nattch']:>6} "
                     f"{size(s['resident']):>8} {s['vgpu']:>4}")
    return lines if snap["shm"] else [*lines, "  (no shared segments)"]


def render(snap: dict[str, Any], mount: str) -> str:
    """The text view, every line at most 80 columns."""
    window = snap["util_window_us"] / 1e6
    head = (f"gdev-smi {__version__}  {time.strftime('%Y-%m-%d %H:%M:%S')}  {mount}\n"
            f"scheduler {snap['scheduler']} (of {' '.join(snap['policies'])}), queueing "
            f"{snap['queueing']}, utilisation over {window:g} s")
    parts = [head, "", *gpu_lines(snap), "", *vgpu_lines(snap), "", "Processes:",
             *process_lines(snap), "", "Shared device memory segments:", *shm_lines(snap)]
    return "\n".join(_fit(line) for line in "\n".join(parts).splitlines()) + "\n"


def view(kind: str, proc: str, mount: str) -> str:
    """One refresh of the view ``kind`` ("text", "json" or "prometheus")."""
    if kind == "prometheus":
        return read_text(proc, "metrics")
    snap = snapshot(proc)
    if kind == "json":
        return json.dumps({"version": __version__, "mount": mount, "time": time.time(),
                           **snap}, indent=2) + "\n"
    return render(snap, mount)


def loop(show: Callable[[], str], interval: float | None, count: int, out: TextIO,
         sleep: Callable[[float], None] = time.sleep) -> None:
    """Print once, or every ``interval`` seconds ``count`` times (0: until interrupted)."""
    n = 0
    while True:
        out.write(show())
        out.flush()
        n += 1
        if interval is None or (count and n >= count):
            return
        sleep(interval)


def main(argv: list[str] | None = None) -> int:
    """The ``gdev-smi`` console script; exit status 1 if the tree cannot be read."""
    p = argparse.ArgumentParser(prog="gdev-smi", description=__doc__.splitlines()[0])
    p.add_argument("--mount", help="gdevd mount point (default: $GDEV_MOUNT or /run/gdev)")
    kind = p.add_mutually_exclusive_group()
    kind.add_argument("--json", action="store_const", const="json", dest="kind",
                      help="one JSON record per refresh")
    kind.add_argument("--prometheus", action="store_const", const="prometheus", dest="kind",
                      help="the metrics in Prometheus' text format")
    p.add_argument("-l", "--loop", type=float, metavar="SECONDS", help="repeat every SECONDS")
    p.add_argument("--count", type=int, default=0, help="with -l: refreshes, then exit")
    p.add_argument("--version", action="version", version=f"gdev-smi {__version__}")
    args = p.parse_args(argv)
    if (args.loop is not None and args.loop <= 0) or args.count < 0:
        p.error("-l must be > 0 seconds and --count >= 0")
    proc = proc_dir(args.mount)
    mount = os.path.dirname(os.path.dirname(proc))
    try:
        loop(lambda: view(args.kind or "text", proc, mount), args.loop, args.count, sys.stdout)
    except KeyboardInterrupt:
        return 0
    except OSError as e:
        print(f"gdev-smi: cannot read {proc}: {e.strerror} (is gdevd running? see "
              "docs/daemon.md)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
