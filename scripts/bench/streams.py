"""Concurrent streams of one context (issue 14, item 4): two kernels and a copy, timed by the
emulated device's own event timestamps.

Through the CUDA driver API in process (``libgdev.cuda`` over ``gdevd.gdev``): kernel A
(``loop`` over ``--size`` threads, ``--iters`` iterations), kernel B (the same) and a pinned
host-to-device copy of ``--copy-mib`` MiB, each between two timed events, issued

* all in the NULL stream (one channel: what every context was before streams), and
* in three streams of the context.

For each: each operation's interval (ms from the first event), whether A and B overlap and
whether the copy ran inside a kernel, the makespan, and the makespan of the streams over the
NULL stream's.  The compute engine interleaves the two kernels (it has one thread), so their
makespan is about the sum of their times; the copy engine runs beside them, so the copy's
time is hidden.  Prints a table; writes its section of docs/benchmarks.md (and
docs/figures/streams_overlap.png) only with ``--write-docs``.

    .venv/bin/python scripts/bench/streams.py [--iters 20000] [--copy-mib 64]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from gdevd import gdev
from libgdev.cuda import bind
from scripts.bench import benchdoc

ROOT = Path(__file__).resolve().parents[2]

OPS = ("kernel A", "kernel B", "copy")


def issue(drv, streams: list, fn, bufs, host, size: int, iters: int) -> dict:  # type: ignore[no-untyped-def]
    """Issue A, B and the copy in ``streams`` (three, NULL stream repeated for serial);
    their (start, end) in ms of device time after the first event."""
    ev = [(drv.cuEventCreate(0), drv.cuEventCreate(0)) for _ in OPS]
    block = 256
    for i, s in enumerate(streams):
        drv.cuEventRecord(ev[i][0], s)
        if i < 2:
            drv.cuLaunchKernel(fn, (size + block - 1) // block, 1, 1, block, 1, 1, 0, s,
                               [bufs[i], size, iters])
        else:
            drv.cuMemcpyHtoDAsync(bufs[2], host, None, s)
        drv.cuEventRecord(ev[i][1], s)
    drv.cuCtxSynchronize()
    first = ev[0][0]
    out = {op: (drv.cuEventElapsedTime(first, a), drv.cuEventElapsedTime(first, b))
           for op, (a, b) in zip(OPS, ev, strict=True)}
    for a, b in ev:
        drv.cuEventDestroy(a)
        drv.cuEventDestroy(b)
    return out


def measure(a: argparse.Namespace) -> dict[str, dict]:
    """The two runs (after three warm-ups of each): label -> intervals."""
    gdev.boot(gdev.GdevConfig(memory=(a.copy_mib * 2 + 64) << 20,
                              dma_memory=(a.copy_mib + 16) << 20, vgpus=1))
    try:
        drv = bind(gdev)
        drv.cuInit(0)
        ctx = drv.cuCtxCreate(0, drv.cuDeviceGet(0))
        fn = drv.cuModuleGetFunction(drv.cuModuleLoad(ROOT / "kernels" / "loop.ptx"), "loop")
        bufs = [drv.cuMemAlloc(4 * a.size), drv.cuMemAlloc(4 * a.size),
                drv.cuMemAlloc(a.copy_mib << 20)]
        host = drv.cuMemAllocHost(a.copy_mib << 20)
        streams = [drv.cuStreamCreate(0) for _ in OPS]
        runs = {}
        for label, ss in (("NULL stream", [None] * 3), ("three streams", streams)):
            for _ in range(3):          # warm-up: the kernel's native code is built
                issue(drv, ss, fn, bufs, host, a.size, a.iters)
            runs[label] = issue(drv, ss, fn, bufs, host, a.size, a.iters)
        drv.cuCtxDestroy(ctx)
        return runs
    finally:
        gdev.shutdown()


def overlaps(x: tuple[float, float], y: tuple[float, float]) -> bool:
    """Whether two intervals intersect."""
    return x[0] < y[1] and y[0] < x[1]


def report(runs: dict[str, dict], a: argparse.Namespace) -> list[str]:
    lines = [f"Kernels: `loop` over {a.size} threads x {a.iters} iterations each; copy: "
             f"{a.copy_mib} MiB pinned host to device.  Intervals in ms of device time "
             f"(event timestamps) from the first event.", "",
             "| issued in | kernel A | kernel B | copy | A, B overlap | copy inside a kernel "
             "| makespan (ms) |", "|---|---|---|---|---|---|---|"]
    spans = {}
    for label, r in runs.items():
        span = max(e for _, e in r.values())
        spans[label] = span
        inside = overlaps(r["copy"], r["kernel A"]) or overlaps(r["copy"], r["kernel B"])
        cells = " | ".join(f"{s:.0f}-{e:.0f}" for s, e in r.values())
        lines.append(f"| {label} | {cells} | "
                     f"{'yes' if overlaps(r['kernel A'], r['kernel B']) else 'no'} | "
                     f"{'yes' if inside else 'no'} | {span:.0f} |")
    ratio = spans["three streams"] / spans["NULL stream"]
    lines += ["", f"Makespan in three streams / in the NULL stream: {ratio:.2f}."]
    return lines


def plot(runs: dict[str, dict]) -> str | None:
    """A Gantt chart of both runs; its path relative to docs/, or None without matplotlib."""
    plt = benchdoc.pyplot()
    if plt is None:
        return None
    fig, axes = plt.subplots(len(runs), 1, figsize=(7, 1.2 + 1.1 * len(runs)), sharex=True)
    for ax, (label, r) in zip(np.atleast_1d(axes), runs.items(), strict=True):
        for i, (s, e) in enumerate(r.values()):
            ax.barh(i, e - s, left=s, color=f"C{i}")
        ax.set_yticks(range(len(OPS)), OPS)
        ax.set_title(label, fontsize=9)
    np.atleast_1d(axes)[-1].set_xlabel("device time (ms)")
    return benchdoc.save_figure(fig, "streams_overlap")


def cli() -> None:
    run = benchdoc.Run()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=1024, help="threads of a kernel")
    p.add_argument("--iters", type=int, default=20000, help="iterations of a kernel")
    p.add_argument("--copy-mib", type=int, default=64, help="MiB of the copy")
    benchdoc.add_write_flag(p)
    a = p.parse_args()
    runs = measure(a)
    lines = report(runs, a)
    print("\n".join(lines))
    if a.write_docs:
        png = plot(runs)
        if png:
            lines += ["", f"![streams]({png})"]
        benchdoc.write_section("streams.py", "Concurrent streams (scripts/bench/streams.py)",
                               "\n".join(lines), run)


if __name__ == "__main__":
    cli()
