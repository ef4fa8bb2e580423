"""Memcpy benchmark through the Gdev API (in-process): the paper's CPY, Fig. 3 and Fig. 4.

Prints, in one run:
  1. 256 MiB HtoD and DtoH: pipelined, unpipelined (pipeline 1), pinned (one copy), and a
     plain numpy copy of the same bytes; the targets (pipelined <= 1.4x the plain copy's
     time and >= 1.4x faster than unpipelined) are checked and reported, never asserted;
  2. a chunk-size sweep 64 KiB .. 32 MiB (Fig. 3);
  3. small sizes, direct I/O vs chunked copies (Fig. 4), and the crossover per direction;
  4. the MMU's vector translation rate (target >= 50 M addresses/s).
Writes its section of docs/benchmarks.md (between its markers; other sections are kept).

    .venv/bin/python scripts/bench/memcpy.py [--size-mib 256] [--reps 3] [--write-docs]
"""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import trio

from gdevd import runtime as rt
from gdevd.runtime import constants as C
from gdevd.runtime import defaults as D
from scripts.bench import benchdoc

MiB = 1 << 20
KiB = 1 << 10


def best(fn: Callable[[], Any], reps: int) -> float:
    """The fastest of ``reps`` timings of the blocking ``fn`` (seconds)."""
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


async def abest(fn: Callable[[], Any], reps: int) -> float:
    """The fastest of ``reps`` timings of the async ``fn`` (seconds)."""
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        await fn()
        times.append(time.perf_counter() - t0)
    return min(times)


class Bench:
    def __init__(self, system: rt.GdevSystem, h: rt.Handle, size: int, reps: int) -> None:
        self.s, self.h, self.size, self.reps = system, h, size, reps
        self.lines: list[str] = []
        self.results: dict[str, Any] = {}

    def out(self, line: str = "") -> None:
        print(line, flush=True)
        self.lines.append(line)

    async def tune(self, chunk: int, depth: int) -> None:
        await rt.gtune(self.h, C.GDEV_TUNE_MEMCPY_CHUNK_SIZE, chunk)
        await rt.gtune(self.h, C.GDEV_TUNE_MEMCPY_PIPELINE_COUNT, depth)

    async def pair(self, va: int, host: np.ndarray, n: int, reps: int) -> tuple[float, float]:
        """Best HtoD and DtoH times of ``n`` bytes between ``host`` and ``va``."""
        h = self.h
        up = await abest(lambda: rt.gmemcpy_to_device(h, va, host, n), reps)
        down = await abest(lambda: rt.gmemcpy_from_device(h, host, va, n), reps)
        return up, down


async def cpy(b: Bench, va: int, host: np.ndarray, pin: rt.DmaBuffer) -> None:
    """CPY: the measurements are interleaved rep by rep (the machine is shared, so load
    shifts between sections would otherwise bias one path); each path keeps its own
    context with warm bounce buffers; the best of ``reps`` counts."""
    n, cfg = b.size, b.s.config
    plain_dst = np.empty_like(host)
    plain_dst[:] = 1
    flat = await rt.gopen(b.s, 0)
    await rt.gtune(flat, C.GDEV_TUNE_MEMCPY_PIPELINE_COUNT, 1)
    fva = await rt.gmalloc(flat, n)
    paths: dict[str, tuple[rt.Handle, int, np.ndarray]] = {
        "pipelined": (b.h, va, host), "unpipelined (pipeline 1)": (flat, fva, host),
        "pinned (one copy)": (b.h, va, pin.array)}
    times: dict[str, list[float]] = {k: [np.inf, np.inf] for k in paths}
    plain, overlap = np.inf, []
    for _ in range(b.reps + 1):                               # the first round warms up
        t0 = time.perf_counter()
        np.copyto(plain_dst, host)
        plain = min(plain, time.perf_counter() - t0)
        for name, (h, dva, buf) in paths.items():
            cpu0, wall0 = time.process_time(), time.perf_counter()
            up, down = await _pair_once(h, dva, buf, n)
            if name == "pipelined":
                overlap.append((time.process_time() - cpu0) / (time.perf_counter() - wall0))
            times[name] = [min(times[name][0], up), min(times[name][1], down)]
    await rt.gclose(flat)
    b.out(f"### CPY: {n // MiB} MiB, chunk {cfg.chunk_size // KiB} KiB, "
          f"pipeline {cfg.pipeline_count}\n")
    b.out("| path | HtoD GB/s | DtoH GB/s | HtoD time / plain | DtoH time / plain |")
    b.out("|---|---|---|---|---|")
    b.out(f"| plain numpy copy | {n / plain / 1e9:.2f} | {n / plain / 1e9:.2f} | 1.00 | 1.00 |")
    for name, (up, down) in times.items():
        b.out(f"| {name} | {n / up / 1e9:.2f} | {n / down / 1e9:.2f} | {up / plain:.2f} | "
              f"{down / plain:.2f} |")
    pipe, unpiped = times["pipelined"], times["unpipelined (pipeline 1)"]
    b.out(f"\nCPU time / wall time of the pipelined copies (all threads; 2.0 = the two "
          f"stages ran fully in parallel, 1.0 = never at once): best {max(overlap):.2f}, "
          f"median {float(np.median(overlap)):.2f}")
    b.out()
    for i, d in enumerate(("HtoD", "DtoH")):
        vs_plain, vs_flat = pipe[i] / plain, unpiped[i] / pipe[i]
        ok = "met" if vs_plain <= 1.4 and vs_flat >= 1.4 else "NOT met"
        b.out(f"- {d}: pipelined takes {vs_plain:.2f}x the plain copy's time (target <= 1.4) "
              f"and is {vs_flat:.2f}x faster than unpipelined (target >= 1.4): {ok}")
    b.out()


async def _pair_once(h: rt.Handle, va: int, buf: np.ndarray, n: int) -> tuple[float, float]:
    t0 = time.perf_counter()
    await rt.gmemcpy_to_device(h, va, buf, n)
    t1 = time.perf_counter()
    await rt.gmemcpy_from_device(h, buf, va, n)
    return t1 - t0, time.perf_counter() - t1


async def chunk_sweep(b: Bench, va: int, host: np.ndarray) -> None:
    n = b.size
    b.out(f"### Chunk size sweep (Fig. 3): {n // MiB} MiB, pipeline "
          f"{b.s.config.pipeline_count} vs 1\n")
    b.out("| chunk | HtoD GB/s | DtoH GB/s | HtoD GB/s (pipeline 1) | DtoH GB/s (pipeline 1) |")
    b.out("|---|---|---|---|---|")
    chunk = 64 * KiB
    best_chunk, best_rate = 0, 0.0
    while chunk <= 32 * MiB:
        await b.tune(chunk, b.s.config.pipeline_count)
        up, down = await b.pair(va, host, n, max(1, b.reps - 1))
        await b.tune(chunk, 1)
        up1, down1 = await b.pair(va, host, n, max(1, b.reps - 1))
        rate = 2 * n / (up + down)
        if rate > best_rate:
            best_chunk, best_rate = chunk, rate
        b.out(f"| {chunk // KiB} KiB | {n / up / 1e9:.2f} | {n / down / 1e9:.2f} | "
              f"{n / up1 / 1e9:.2f} | {n / down1 / 1e9:.2f} |")
        chunk *= 2
    b.out(f"\nBest chunk (mean of both directions): {best_chunk // KiB} KiB "
          f"({best_rate / 1e9:.2f} GB/s); default: {b.s.config.chunk_size // KiB} KiB\n")
    await b.tune(b.s.config.chunk_size, b.s.config.pipeline_count)


async def small_sizes(b: Bench, va: int, host: np.ndarray) -> None:
    """Fig. 4: direct vs chunked per size; the boundary rule picks the defaults.

    A direct copy runs on the trio loop's thread, so it delays every other context's call
    for its duration; a chunked copy runs off the loop but pays a fixed thread hand-off.
    Rule: the boundary is the largest size at which the direct copy is still faster than
    the chunked one AND takes at most DIRECT_BUDGET_US on the loop.
    """
    cfg = b.s.config
    saved = cfg.iowrite_limit, cfg.ioread_limit
    b.out("### Small copies (Fig. 4): direct I/O vs chunked, microseconds per copy\n")
    b.out("| size | HtoD direct | HtoD chunked | DtoH direct | DtoH chunked |")
    b.out("|---|---|---|---|---|")
    cross: dict[str, int | None] = {"HtoD": None, "DtoH": None}
    chosen = {"HtoD": 0, "DtoH": 0}
    size = 256
    while size <= 4 * MiB:
        reps = max(20, min(400, (64 * MiB) // size))
        cfg.iowrite_limit = cfg.ioread_limit = 1 << 40
        direct = await b.pair(va, host, size, reps)
        cfg.iowrite_limit = cfg.ioread_limit = 0
        chunked = await b.pair(va, host, size, reps)
        for i, d in enumerate(("HtoD", "DtoH")):
            if cross[d] is None and chunked[i] < direct[i]:
                cross[d] = size
            if cross[d] is None and direct[i] * 1e6 <= D.DIRECT_BUDGET_US:
                chosen[d] = size
        b.out(f"| {_fmt(size)} | {direct[0] * 1e6:.1f} | {chunked[0] * 1e6:.1f} | "
              f"{direct[1] * 1e6:.1f} | {chunked[1] * 1e6:.1f} |")
        size *= 2
    cfg.iowrite_limit, cfg.ioread_limit = saved
    b.out()
    for d in ("HtoD", "DtoH"):
        c = cross[d]
        b.out(f"- {d}: chunked first beats direct at {_fmt(c) if c else 'no size measured'}; "
              f"largest direct copy within the {D.DIRECT_BUDGET_US} us loop budget: "
              f"{_fmt(chosen[d])}")
    b.out(f"- defaults in use (gdevd/runtime/defaults.py): IOWRITE_LIMIT (HtoD) "
          f"{_fmt(saved[0])}, IOREAD_LIMIT (DtoH) {_fmt(saved[1])}\n")
    b.results["crossover"] = cross


def translate_rate(b: Bench, h: rt.Handle, va: int) -> None:
    n = 16 * MiB
    rng = np.random.default_rng(0)
    vas = (va + rng.integers(0, b.size, n, dtype=np.uint64)).astype(np.uint64)
    h.mmu.translate_v(vas[:1024])
    t = best(lambda: h.mmu.translate_v(vas), b.reps)
    b.out(f"### Vector translation\n\n{n // MiB} M random addresses in {b.size // MiB} MiB: "
          f"{n / t / 1e6:.0f} M addresses/s (target >= 50 M/s)\n")


def _fmt(n: int) -> str:
    return f"{n // MiB} MiB" if n >= MiB else f"{n // KiB} KiB" if n >= KiB else f"{n} B"


async def main(args: argparse.Namespace) -> list[str]:
    size = args.size_mib * MiB
    config = rt.GdevConfig(memory=max(1 << 30, 3 * size), dma_memory=max(512 * MiB, 2 * size),
                           vgpus=1)
    async with rt.GdevSystem(config) as system:
        h = await rt.gopen(system, 0)
        va = await rt.gmalloc(h, size)
        host = np.random.default_rng(1).integers(0, 256, size, dtype=np.uint8)
        pin = await rt.gmalloc_dma(h, size)
        pin.array[:] = host
        await rt.gmemcpy_to_device(h, va, host, size)       # fault the device pages in
        b = Bench(system, h, size, args.reps)
        b.out(f"Machine: {platform.processor() or platform.machine()}, "
              f"Python {platform.python_version()}, numpy {np.__version__}\n")
        await cpy(b, va, host, pin)
        if not args.skip_sweeps:
            await chunk_sweep(b, va, host)
            await small_sizes(b, va, host)
        translate_rate(b, h, va)
        system.check_invariants()
        return b.lines


if __name__ == "__main__":
    RUN = benchdoc.Run()
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--size-mib", type=int, default=256)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--skip-sweeps", action="store_true", help="only CPY and translation")
    benchdoc.add_write_flag(p)
    a = p.parse_args()
    out = trio.run(main, a)
    if a.write_docs:
        benchdoc.write_section("memcpy.py", "Memcpy through the Gdev API "
                               "(scripts/bench/memcpy.py)", "\n".join(out), RUN)
