"""GPU eaters (GLoop Fig. 4) and the preemption slice: how long-running kernels share a GPU.

1. Fig. 4: one eater (``loop`` over ``--size`` threads, ``--iters`` iterations each) alone,
   then two eaters started together on one vGPU without preemption (``slice_us`` 0, the
   paper's Gdev) and with each of ``--slices``: each one's execution time, its ratio to the
   alone time and the makespan against two alone runs (the cost of switching)
   (GLoop: ~2.07x each when interleaved; serial: 1x and 2x).  Results are compared with the
   alone run's, bit for bit.
2. Latency of a high-priority synchronous launch (``idle --short``) of priority 40 and of
   priority 20 beside ``--eaters`` eaters (priority 20), per slice length: median and 95th
   percentile from glaunch to gsync return, and the eaters' launches meanwhile.

Prints tables; writes its section of docs/benchmarks.md (and docs/figures/gloop_fig4.png)
only with ``--write-docs``.

    .venv/bin/python scripts/bench/eaters.py [--iters 200000] [--slices 1000,2000,5000,10000]
"""

from __future__ import annotations

import argparse
import struct
import time
from pathlib import Path

import numpy as np
import trio

from gdevd import runtime as rt
from gdevd.gpu.ptx import jit
from scripts.bench import benchdoc

ROOT = Path(__file__).resolve().parents[2]

PTX = (ROOT / "kernels" / "loop.ptx").read_bytes()


class Eater:
    """A context with kernels/loop.ptx loaded and an output array of ``size`` words."""

    def __init__(self, h: rt.Handle, code: int, data: int, size: int) -> None:
        self.h, self.code, self.data, self.size = h, code, data, size

    @classmethod
    async def open(cls, s: rt.GdevSystem, size: int, prio: int | None = None) -> Eater:
        h = await rt.gopen(s, 0)
        if prio is not None:
            await rt.gset_priority(h, prio)
        code = await rt.gmalloc(h, len(PTX))
        await rt.gmemcpy_to_device(h, code, PTX, len(PTX))
        return cls(h, code, await rt.gmalloc(h, max(4096, 4 * size)), size)

    def loop(self, n: int) -> rt.GdevKernel:
        return rt.GdevKernel(self.code, len(PTX), "loop", grid=((self.size + 255) // 256, 1, 1),
                             block=(256, 1, 1), params=struct.pack("<QII", self.data,
                                                                   self.size, n))

    def idle(self, n: int) -> rt.GdevKernel:
        return rt.GdevKernel(self.code, len(PTX), "idle", params=struct.pack("<QI", self.data, n))

    async def run(self, k: rt.GdevKernel) -> float:
        """Launch ``k``, wait for it; seconds from launch to return."""
        t0 = time.perf_counter()
        await rt.gsync(self.h, await rt.glaunch(self.h, k))
        return time.perf_counter() - t0

    async def result(self) -> bytes:
        out = bytearray(4 * self.size)
        await rt.gmemcpy_from_device(self.h, out, self.data, len(out))
        return bytes(out)


def system(slice_us: int) -> rt.GdevSystem:
    s = rt.GdevSystem(rt.GdevConfig(vgpus=1))
    s.scheduler.preempter.slice_s = slice_us / 1e6
    return s


async def fig4(size: int, iters: int, slice_us: int) -> tuple[float, list[float], float, bool]:
    """(alone time, the two concurrent eaters' times, CPU time of the pair over twice the
    CPU time of one alone, results identical).  The alone time is the median of two runs
    before the pair and two after (the shared machine's load drifts).  The CPU ratio is the
    cost of switching, insensitive to other processes' load; wall times are not."""
    async with system(slice_us) as s:
        a, b = await Eater.open(s, size), await Eater.open(s, size)
        await a.run(a.loop(1))                  # decode the module first
        await a.run(a.loop(iters))              # (and let its native code be built)
        runs, cpus = [], []

        async def alone_runs(n: int) -> None:
            for _ in range(n):
                c0 = time.process_time()
                runs.append(await a.run(a.loop(iters)))
                cpus.append(time.process_time() - c0)
        await alone_runs(2)
        ref = await a.result()
        times: list[float] = [0.0, 0.0]

        async def one(i: int, e: Eater) -> None:
            times[i] = await e.run(e.loop(iters))
        c0 = time.process_time()
        async with trio.open_nursery() as n:
            n.start_soon(one, 0, a)
            n.start_soon(one, 1, b)
        cpu_pair = time.process_time() - c0
        same = await a.result() == ref == await b.result()
        await alone_runs(2)                     # alone again: the machine's load drifts
        alone, cpu_alone = float(np.median(runs)), float(np.median(cpus))
    return alone, times, cpu_pair / (2 * cpu_alone), same


async def latency(slice_us: int, prio: int, eaters: int, size: int, iters: int, short: int,
                  duration: float) -> tuple[float, float, int]:
    """(median, p95 latency in ms, eater launches completed) of a probe of priority ``prio``
    beside ``eaters`` eaters of priority 20."""
    async with system(slice_us) as s:
        hi = await Eater.open(s, 1, prio=prio)
        es = [await Eater.open(s, size, prio=20) for _ in range(eaters)]
        stop = trio.Event()
        done = [0]
        lat: list[float] = []

        async def eat(e: Eater) -> None:
            while not stop.is_set():
                await e.run(e.loop(iters))
                done[0] += 1
        async with trio.open_nursery() as n:
            for e in es:
                n.start_soon(eat, e)
            await trio.sleep(0.2)
            end = time.perf_counter() + duration
            while time.perf_counter() < end:
                lat.append(await hi.run(hi.idle(short)))
                await trio.sleep(0.005)
            stop.set()
    ms = np.array(lat) * 1e3
    return float(np.median(ms)), float(np.percentile(ms, 95)), done[0]


async def main(a: argparse.Namespace) -> tuple[list[str], list[tuple]]:
    lines: list[str] = []
    rows: list[tuple] = []

    def out(line: str = "") -> None:
        print(line, flush=True)
        lines.append(line)
    out(f"Fig. 4: two eaters (loop, {a.size} threads x {a.iters} iterations) on one vGPU")
    out()
    out("| slice (us) | alone (s, median of 4) | eater A (s) | eater B (s) | A / alone | "
        "B / alone | makespan / 2 alone | CPU / 2 alone | identical |")
    out("|---|---|---|---|---|---|---|---|---|")
    for sl in [0, *a.slices]:
        alone, (ta, tb), cpu, same = await fig4(a.size, a.iters, sl)
        rows.append((sl, alone, ta, tb))
        out(f"| {sl or 'off (Gdev)'} | {alone:.2f} | {ta:.2f} | {tb:.2f} | {ta / alone:.2f} | "
            f"{tb / alone:.2f} | {max(ta, tb) / (2 * alone):.2f} | {cpu:.3f} | {same} |")
    out()
    out(f"Sync launch (idle {a.short}) beside {a.eaters} eaters of priority 20 "
        f"(loop {a.size} x {a.lat_iters}), {a.duration:g} s each")
    out()
    out("| slice (us) | probe priority | median (ms) | p95 (ms) | eater launches |")
    out("|---|---|---|---|---|")
    for sl in [0, *a.slices]:
        for prio in (40, 20):
            med, p95, done = await latency(sl, prio, a.eaters, a.size, a.lat_iters, a.short,
                                           a.duration)
            out(f"| {sl or 'off'} | {prio} | {med:.2f} | {p95:.2f} | {done} |")
    return lines, rows


def plot(rows: list[tuple]) -> str | None:
    """GLoop's Fig. 4: each eater's time over its alone time, per slice; the PNG's path
    relative to docs/, or None without matplotlib."""
    plt = benchdoc.pyplot()
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(6, 3))
    x = np.arange(len(rows))
    for i, (label, col) in enumerate((("eater A", 2), ("eater B", 3))):
        ax.bar(x + (i - 0.5) * 0.38, [r[col] / r[1] for r in rows], 0.38, label=label)
    ax.axhline(1, color="grey", lw=0.8)
    ax.axhline(2.3, color="red", lw=0.8, ls="--", label="2.3x (the issue's bound)")
    ax.set_xticks(x, [f"{r[0] // 1000} ms" if r[0] else "off (Gdev)" for r in rows])
    ax.set_xlabel("preemption slice")
    ax.set_ylabel("time / alone")
    ax.legend(fontsize=7)
    ax.set_title("Two GPU eaters on one vGPU (GLoop Fig. 4)", fontsize=9)
    return benchdoc.save_figure(fig, "gloop_fig4")


def cli() -> None:
    run = benchdoc.Run()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=256, help="threads of an eater")
    p.add_argument("--iters", type=int, default=200_000, help="iterations of a Fig. 4 eater")
    p.add_argument("--eaters", type=int, default=4, help="eaters beside the latency probe")
    p.add_argument("--lat-iters", type=int, default=20_000, help="iterations of those eaters")
    p.add_argument("--short", type=int, default=20, help="idle iterations of the probe")
    p.add_argument("--duration", type=float, default=4.0, help="seconds per latency run")
    p.add_argument("--slices", default="1000,2000,5000,10000",
                   type=lambda t: [int(x) for x in t.split(",")], help="slices to compare, us")
    p.add_argument("--engine", choices=("auto", "jit", "interp"), default=None,
                   help="PTX engine (default: the configured one); eaters of >= 2 s need "
                   "about 10x the iterations on jit")
    benchdoc.add_write_flag(p)
    a = p.parse_args()
    if a.engine:
        jit.set_engine(a.engine)
    lines, rows = trio.run(main, a)
    if a.write_docs:
        png = plot(rows)
        if png:
            lines += ["", f"![GLoop Fig. 4]({png})"]
        benchdoc.write_section("eaters.py", "GPU eaters and preemption (scripts/bench/eaters.py)",
                               "\n".join(lines), run)


if __name__ == "__main__":
    cli()
