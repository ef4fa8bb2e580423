"""A tenant's control calls beside another tenant's kernels, with the compute engine's
threads ENGINE_NICE nicer than the daemon (as shipped) and at its niceness, in one run.

    python scripts/bench/control_latency.py [--calls N] [--rounds R] [--write-docs]

Runs a gdevd in this process once per setting and round (its mount on a temporary
directory).  In each, context B makes ``--calls`` control calls (``cuCtxGetPriority``
through kcuda: a round trip through the runtime's trio loop, no engine work) while the
engine is idle, then again while context A keeps the compute engine busy with AES-XTS
launches of 4 MiB (``kernels/aes.ptx``, compiled, on every engine thread); it reports the
median and 90th percentile of each, in ms.  See docs/scheduling.md ("The engine's threads
run nicer than the daemon").
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

import kcuda
from gdevd.gpu import compute
from gdevd.modules.ecryptfs.cipher import GpuCipher
from scripts.bench import benchdoc, inproc
from scripts.bench.ecryptfs import wait_compiled

MiB = 1 << 20
READING = """\
Reading. The median barely moves: most calls find a CPU free.  The tail is what a busy
engine can cost another tenant: a call that finds both CPUs running the kernel waits for
the OS to preempt an engine thread, which it does sooner when the engine runs nicer than
the daemon.  How long that tail is depends on the host, which is shared: in some runs both
settings show a short one (docs/scheduling.md sums up five runs).  Compare the settings
across the rows of one run.
"""
TITLE = "Control calls beside a busy compute engine (scripts/bench/control_latency.py)"


def percentiles(fn: Callable[[], Any], calls: int) -> tuple[float, float]:
    """(median, 90th percentile) in ms of ``calls`` calls of ``fn``."""
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    times.sort()
    return statistics.median(times) * 1e3, times[int(len(times) * 0.9)] * 1e3


def measure(mount: str, calls: int) -> dict[str, tuple[float, float]]:
    """Context B's control calls idle and beside context A's kernels (see the docstring)."""
    a, b = GpuCipher(kcuda, 0), GpuCipher(kcuda, 0)
    try:
        wait_compiled(mount)
        key, data = os.urandom(64), os.urandom(4 * MiB)
        a.decrypt(key, 0, data[:4096])          # the kernels are loaded and compiled
        out = {"idle": percentiles(b.priority, calls)}
        stop = threading.Event()

        def eater() -> None:
            while not stop.is_set():
                a.decrypt(key, 0, data)
        thread = threading.Thread(target=eater, name="eater")
        thread.start()
        try:
            time.sleep(0.3)
            out["busy"] = percentiles(b.priority, calls)
        finally:
            stop.set()
            thread.join()
        return out
    finally:
        a.close()
        b.close()


def one_daemon(nice: int, calls: int) -> dict[str, tuple[float, float]]:
    """Start a gdevd whose compute engine runs ``nice`` nicer than it, measure, stop it."""
    shipped, compute.ENGINE_NICE = compute.ENGINE_NICE, nice
    try:
        return inproc.with_daemon(lambda mount: measure(mount, calls), "ctl-bench-")
    finally:
        compute.ENGINE_NICE = shipped


def main() -> None:
    run = benchdoc.Run()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--calls", type=int, default=400)
    p.add_argument("--rounds", type=int, default=3)
    benchdoc.add_write_flag(p)
    args = p.parse_args()
    rows = []
    for _ in range(args.rounds):
        for nice in (compute.ENGINE_NICE, 0):
            got = one_daemon(nice, args.calls)
            row = [f"{nice}", *(f"{v:.3f}" for k in ("idle", "busy") for v in got[k])]
            rows.append(row)
            print("  engine nicer by", " | ".join(row), flush=True)
    body = (f"Context B's `cuCtxGetPriority` ({args.calls} calls, ms) while the engine is idle "
            "and while context A's AES-XTS launches of 4 MiB keep it busy, with the compute "
            "engine's threads nicer than the daemon by the first column (shipped: "
            f"{compute.ENGINE_NICE}); one daemon per row.\n\n" +
            benchdoc.table(["engine nicer by", "idle median", "idle p90", "busy median",
                            "busy p90"], rows) + "\n" + READING)
    print(body)
    if args.write_docs:
        benchdoc.write_section("control_latency.py", TITLE, body, run)


if __name__ == "__main__":
    main()
