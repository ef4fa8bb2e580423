"""Priorities under interference (the paper's Fig. 7/10 situation) and the scheduler's cost.

1. A high-priority client (priority 40) runs short synchronous launches (``idle --short``)
   on one vGPU (100%), alone and under a flood from ``--flood`` low-priority contexts
   (priority 0, ``idle --long`` kernels, 4 launches in flight each), with scheduling (BAND)
   and without (NULL: the engine's FIFO).  Reports its throughput and launch latency
   (glaunch to gsync return: median and 95th percentile).
2. The scheduler's own cost: ``begin`` + ``end`` of an uncontended launch, per policy
   (target 20 us or less), and the launch round trip alone with BAND vs NULL.

Writes its section of docs/benchmarks.md (between its markers).

    .venv/bin/python scripts/bench/priority.py [--duration 4] [--flood 4] [--write-docs]
"""

from __future__ import annotations

import argparse
import os
import struct
import time
from pathlib import Path

import numpy as np
import trio

from gdevd import runtime as rt
from gdevd.runtime.sched import COMPUTE
from scripts.bench import benchdoc

ROOT = Path(__file__).resolve().parents[2]

PTX = (ROOT / "kernels" / "loop.ptx").read_bytes()


async def _kernel(h: rt.Handle, n: int) -> rt.GdevKernel:
    code = await rt.gmalloc(h, len(PTX))
    await rt.gmemcpy_to_device(h, code, PTX, len(PTX))
    out = await rt.gmalloc(h, 4096)
    return rt.GdevKernel(code, len(PTX), "idle", params=struct.pack("<QI", out, n))


async def _flood(s: rt.GdevSystem, n: int, stop: trio.Event, ready: trio.Event) -> None:
    h = await rt.gopen(s, 0)
    await rt.gset_priority(h, 0)
    k = await _kernel(h, n)
    ready.set()
    fences: list[int] = []
    while not stop.is_set():
        fences.append(await rt.glaunch(h, k))
        if len(fences) >= 4:
            await rt.gsync(h, fences.pop(0))
    for f in fences:
        await rt.gsync(h, f)


async def interference(policy: str, flood: int, duration: float, short: int,
                       long: int) -> tuple[float, float, float]:
    """High-priority launches per second, median and p95 latency (ms)."""
    async with rt.GdevSystem(rt.GdevConfig(memory=64 << 20, vgpus=1)) as s:
        s.scheduler.set_policy(policy)
        h = await rt.gopen(s, 0)
        await rt.gset_priority(h, 40)
        k = await _kernel(h, short)
        stop = trio.Event()
        lat: list[float] = []
        async with trio.open_nursery() as n:
            readies = [trio.Event() for _ in range(flood)]
            for ready in readies:
                n.start_soon(_flood, s, long, stop, ready)
            for ready in readies:
                await ready.wait()
            await trio.sleep(0.2 if flood else 0)
            t_end = time.perf_counter() + duration
            while time.perf_counter() < t_end:
                t = time.perf_counter()
                await rt.gsync(h, await rt.glaunch(h, k))
                lat.append(time.perf_counter() - t)
            stop.set()
        return len(lat) / duration, 1e3 * float(np.median(lat)), \
            1e3 * float(np.percentile(lat, 95))


async def sched_cost(policy: str, reps: int) -> tuple[float, float]:
    """Wall and CPU (this thread's) microseconds per uncontended begin + end pair."""
    async with rt.GdevSystem(rt.GdevConfig(memory=16 << 20)) as s:
        s.scheduler.set_policy(policy)
        h = await rt.gopen(s, 0)
        sched = s.scheduler
        for _ in range(100):
            await sched.begin(h, COMPUTE)
            sched.end(h, COMPUTE)
        wall = cpu = float("inf")
        for _ in range(3):
            t, c = time.perf_counter(), time.thread_time()
            for _ in range(reps):
                await sched.begin(h, COMPUTE)
                sched.end(h, COMPUTE)
            cpu = min(cpu, (time.thread_time() - c) / reps)
            wall = min(wall, (time.perf_counter() - t) / reps)
        return wall * 1e6, cpu * 1e6


async def round_trip(policy: str, reps: int, short: int) -> float:
    """Median milliseconds of a synchronous launch of ``idle short`` alone."""
    async with rt.GdevSystem(rt.GdevConfig(memory=16 << 20)) as s:
        s.scheduler.set_policy(policy)
        h = await rt.gopen(s, 0)
        k = await _kernel(h, short)
        lat = []
        for _ in range(reps):
            t = time.perf_counter()
            await rt.gsync(h, await rt.glaunch(h, k))
            lat.append(time.perf_counter() - t)
        return 1e3 * float(np.median(lat))


async def main(a: argparse.Namespace) -> list[str]:
    lines: list[str] = []

    def out(line: str = "") -> None:
        print(line, flush=True)
        lines.append(line)
    out("In-process runtime, one vGPU at 100%.")
    out()
    out(f"### High priority (40, idle {a.short}, synchronous) vs {a.flood} low-priority "
        f"floods (0, idle {a.long}, 4 in flight each), {a.duration:g} s each")
    out()
    out("| scheduling | flood | launches/s | median latency (ms) | p95 latency (ms) |")
    out("|---|---|---|---|---|")
    for policy, label in (("null", "none (NULL)"), ("band", "BAND")):
        for flood in (0, a.flood):
            tput, med, p95 = await interference(policy, flood, a.duration, a.short, a.long)
            out(f"| {label} | {flood} | {tput:.0f} | {med:.2f} | {p95:.2f} |")
    out()
    out(f"### Scheduler cost per launch (begin + end, uncontended, best of 3 x {a.reps})")
    out()
    out("| policy | wall us per launch | CPU us per launch |")
    out("|---|---|---|")
    for policy in ("band", "credit", "fifo", "null"):
        wall, cpu = await sched_cost(policy, a.reps)
        out(f"| {policy} | {wall:.1f} | {cpu:.1f} |")
    out()
    out(f"Load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs "
        f"(the machine is shared; CPU time excludes the time other processes held the CPU).")
    out()
    rt_band = await round_trip("band", 200, a.short)
    rt_null = await round_trip("null", 200, a.short)
    out(f"Synchronous launch round trip alone (idle {a.short}, median of 200): BAND "
        f"{rt_band:.3f} ms, NULL {rt_null:.3f} ms.")
    return lines


if __name__ == "__main__":
    bench_run = benchdoc.Run()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--duration", type=float, default=4.0, help="seconds per measurement")
    p.add_argument("--flood", type=int, default=4, help="low-priority contexts")
    p.add_argument("--short", type=int, default=50, help="idle iterations, high priority")
    p.add_argument("--long", type=int, default=300, help="idle iterations, flood")
    p.add_argument("--reps", type=int, default=20000, help="pairs for the cost measurement")
    benchdoc.add_write_flag(p)
    args = p.parse_args()
    result = trio.run(main, args)
    if args.write_docs:
        benchdoc.write_section("priority.py", "Priorities and scheduler cost "
                               "(scripts/bench/priority.py)", "\n".join(result), bench_run)
