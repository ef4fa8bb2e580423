"""Virtual GPU scheduling, in-process with real PTX launches: the paper's Fig. 14, 15, 16.

Scenarios (each runs ``--duration`` seconds on a fresh system; utilisation is measured from
the scheduler's busy intervals in 1 s windows):

* fig14: two vGPUs at 50/50; vd0 runs short kernels, vd1 long ones and starts
  ``duration/4`` later; FIFO, Credit and BAND side by side.  Error: mean absolute error of
  each vGPU's utilisation against its 50% in the windows after warm-up (both running,
  first window skipped), and the same for the normalised share (utilisation / sum).
* fig15: MRQ vs SDQ; two vGPUs at 50/50, each alternating an 8 MiB pageable copy (copy
  engine) and a launch: under MRQ compute and copy shares are enforced separately and the
  four utilisations sum above 100%.
* fig16: four vGPUs at 25% with kernels of different lengths, started ``duration/8`` apart.
* pairs: back-to-back unsynchronised launches (4 in flight per context) at 10/90 and 70/25/5:
  completed work (busy time and launches) ratios.
* eaters: one endless kernel per vGPU (GLoop's GPU eaters) at 10/90 and 70/25/5, with and
  without preemption: busy-time ratio and error against the shares per 1 s window.

Writes PNG plots (if matplotlib is installed: ``pip install -e '.[bench]'``) to
docs/figures/ and its section of docs/benchmarks.md.

    .venv/bin/python scripts/bench/vgpu.py [--duration 10] [--only fig14,pairs] [--write-docs]
"""

from __future__ import annotations

import argparse
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import trio

from gdevd import runtime as rt
from gdevd.runtime.sched import COMPUTE, MEMORY
from scripts.bench import benchdoc

ROOT = Path(__file__).resolve().parents[2]

PTX = (ROOT / "kernels" / "loop.ptx").read_bytes()
FIG = ROOT / "docs" / "figures"
WRITE_FIGURES = True  # as a script: only with --write-docs (docs/figures too)
MiB = 1 << 20


@dataclass
class Client:
    """One context: vGPU, kernel length (idle iterations), start offset, launches in flight,
    and an optional copy before every launch."""

    vgpu: int
    n: int
    start: float = 0.0
    inflight: int = 1
    copy: int = 0
    launches: int = 0
    copies: int = 0
    cid: int = 0
    eater: bool = False     # one launch of idle(n) that outlasts the run, closed at its end


@dataclass
class Run:
    """What a scenario measured."""

    duration: float
    t0: float
    trace: list[tuple[int, str, int, float, float]]
    clients: list[Client]
    shares: list[int]
    windows: dict[tuple[int, str], list[float]] = field(default_factory=dict)


async def _client(s: rt.GdevSystem, c: Client, t0: float, until: float) -> None:
    h = await rt.gopen(s, c.vgpu)
    c.cid = h.cid
    code = await rt.gmalloc(h, len(PTX))
    await rt.gmemcpy_to_device(h, code, PTX, len(PTX))
    out = await rt.gmalloc(h, 4096)
    k = rt.GdevKernel(code, len(PTX), "idle", params=struct.pack("<QI", out, c.n))
    if c.copy:
        dev, host = await rt.gmalloc(h, c.copy), np.ones(c.copy, np.uint8)
    await trio.sleep_until(t0 + c.start)
    if c.eater:
        await rt.glaunch(h, k)
        await trio.sleep_until(until)
        await rt.gclose(h)                       # cancels the kernel at its next quantum
        return
    fences: list[int] = []
    while trio.current_time() < until:
        if c.copy:
            await rt.gmemcpy_to_device(h, dev, host, c.copy)
            c.copies += 1
        fences.append(await rt.glaunch(h, k))
        if len(fences) >= c.inflight:
            await rt.gsync(h, fences.pop(0))
            c.launches += 1
    for f in fences:
        await rt.gsync(h, f)
        c.launches += 1


async def scenario(clients: list[Client], shares: list[int], duration: float,
                   policy: str = "band", queueing: str = "mrq", slice_us: int | None = None) -> Run:
    """Run ``clients`` on vGPUs with compute/memory ``shares`` for ``duration`` seconds
    (``slice_us``: the preemption slice, None for the default)."""
    cfg = rt.GdevConfig(memory=256 * MiB, vgpus=len(shares))
    async with rt.GdevSystem(cfg) as s:
        if slice_us is not None:
            s.scheduler.preempter.slice_s = slice_us / 1e6
        for v, share in zip(s.virtual, shares, strict=False):
            v.compute_bandwidth = v.memory_bandwidth = share
        s.scheduler.set_policy(policy)
        s.scheduler.set_queueing(queueing)
        trace: list[tuple[int, str, int, float, float]] = []
        s.scheduler.trace = trace
        t0 = trio.current_time() + 0.5            # after every client loaded its module
        async with trio.open_nursery() as n:
            for c in clients:
                n.start_soon(_client, s, c, t0, t0 + duration)
        return Run(duration, t0, trace, clients, shares)


def windows(run: Run, width: float = 1.0) -> dict[tuple[int, str], list[float]]:
    """Utilisation (percent) of each (vGPU, resource) in consecutive windows."""
    count = int(run.duration / width)
    edges = [run.t0 + i * width for i in range(count + 1)]
    out: dict[tuple[int, str], list[float]] = {}
    for vd, kind, _, a, b in run.trace:
        row = out.setdefault((vd, kind), [0.0] * count)
        for i in range(count):
            lo, hi = edges[i], edges[i + 1]
            if b > lo and a < hi:
                row[i] += 100 * (min(b, hi) - max(a, lo)) / width
    run.windows = out
    return out


def errors(run: Run, vgpus: list[int], first: int, kind: str = COMPUTE) -> tuple[float, float]:
    """Mean absolute error of utilisation against the shares, and of normalised shares,
    over windows ``first``.. (vGPUs ``vgpus`` all active there)."""
    w = run.windows or windows(run)
    rows = [w.get((v, kind), [0.0] * int(run.duration)) for v in vgpus]
    targets = [run.shares[v] for v in vgpus]
    abs_err, norm_err = [], []
    for i in range(first, len(rows[0])):
        u = [r[i] for r in rows]
        total = sum(u) or 1.0
        for ui, t in zip(u, targets, strict=True):
            abs_err.append(abs(ui - t))
            norm_err.append(abs(100 * ui / total - 100 * t / sum(targets)))
    return float(np.mean(abs_err)), float(np.mean(norm_err))


def plot(name: str, runs: dict[str, Run], kinds: tuple[str, ...] = (COMPUTE,)) -> str | None:
    """Utilisation over time, one panel per run; the PNG's path, or None without matplotlib
    or without ``--write-docs`` (the committed figures keep the full run's)."""
    if not WRITE_FIGURES:
        return None
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    FIG.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, len(runs), figsize=(5 * len(runs), 3.2), squeeze=False)
    for ax, (title, run) in zip(axes[0], runs.items(), strict=True):
        w = run.windows or windows(run)
        for (vd, kind), row in sorted(w.items()):
            if kind in kinds:
                ax.plot(range(1, len(row) + 1), row, marker="o", ms=3,
                        label=f"vd{vd} {kind} ({run.shares[vd]}%)")
        ax.set_title(title)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("utilisation (%)")
        ax.set_ylim(0, 105)
        ax.legend(fontsize=7)
    fig.tight_layout()
    path = FIG / f"{name}.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return str(path.relative_to(ROOT))


class Report:
    """Collects lines for stdout and docs/benchmarks.md."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def out(self, line: str = "") -> None:
        print(line, flush=True)
        self.lines.append(line)

    def table(self, run: Run, kind: str = COMPUTE) -> None:
        w = run.windows or windows(run)
        self.out("| window (s) | " + " | ".join(
            f"vd{v} {k}" for (v, k) in sorted(w) if k == kind) + " |")
        self.out("|---" * (1 + sum(1 for key in w if key[1] == kind)) + "|")
        for i in range(int(run.duration)):
            self.out(f"| {i}-{i + 1} | " + " | ".join(
                f"{w[key][i]:.1f}" for key in sorted(w) if key[1] == kind) + " |")


async def fig14(r: Report, d: float, short: int, long: int) -> None:
    r.out(f"### Fig. 14: 50/50, short (idle {short}) vs long (idle {long}) kernels, "
          f"{d:g} s, vd1 starts at {d / 4:g} s")
    r.out()
    runs = {}
    r.out("| policy | vd0 util | vd1 util | MAE vs 50% | MAE of normalised share |")
    r.out("|---|---|---|---|---|")
    for policy in ("fifo", "credit", "band"):
        run = await scenario([Client(0, short), Client(1, long, start=d / 4)], [50, 50], d,
                             policy)
        w = windows(run)
        first = int(d / 4) + 2
        mae, norm = errors(run, [0, 1], first)
        u0 = np.mean(w[(0, COMPUTE)][first:])
        u1 = np.mean(w.get((1, COMPUTE), [0.0] * int(d))[first:])
        r.out(f"| {policy} | {u0:.1f} | {u1:.1f} | {mae:.1f} | {norm:.1f} |")
        runs[policy] = run
    r.out()
    r.out(f"Windows {first}..{int(d)} s (both running, one warm-up window skipped).")
    r.out()
    png = plot("sched_fig14", runs)
    if png:
        r.out(f"![Fig. 14]({Path(png).relative_to('docs')})")
        r.out()
    r.out("BAND, per window:")
    r.out()
    r.table(runs["band"])
    r.out()


async def fig15(r: Report, d: float, n: int) -> None:
    r.out(f"### Fig. 15: MRQ vs SDQ, 50/50, each vGPU alternating an 8 MiB copy and a launch "
          f"(idle {n}), {d:g} s")
    r.out()
    r.out("| queueing | vd0 compute | vd1 compute | vd0 copy | vd1 copy | sum |")
    r.out("|---|---|---|---|---|---|")
    runs = {}
    for q in ("mrq", "sdq"):
        run = await scenario([Client(0, n, copy=8 * MiB), Client(1, n, copy=8 * MiB)],
                             [50, 50], d, "band", q)
        w = windows(run)
        cells = [np.mean((w.get((v, k)) or [0.0] * int(d))[1:])
                 for k in (COMPUTE, MEMORY) for v in (0, 1)]
        r.out(f"| {q} | " + " | ".join(f"{c:.1f}" for c in cells) +
              f" | {sum(cells):.1f} |")
        runs[q] = run
    r.out()
    r.out("Under SDQ copies are charged to the compute queue (as in Gdev), so the copy "
          "columns are 0 and the compute columns hold both.")
    r.out()
    png = plot("sched_fig15", runs, (COMPUTE, MEMORY))
    if png:
        r.out(f"![Fig. 15]({Path(png).relative_to('docs')})")
        r.out()


async def fig16(r: Report, d: float, n: int) -> None:
    r.out(f"### Fig. 16: four vGPUs at 25%, kernels idle {n}..{4 * n}, started {d / 8:g} s "
          f"apart, {d:g} s")
    r.out()
    run = await scenario([Client(i, n * (i + 1), start=i * d / 8) for i in range(4)],
                         [25] * 4, d)
    windows(run)
    r.table(run)
    first = int(3 * d / 8) + 2
    mae, norm = errors(run, [0, 1, 2, 3], first)
    r.out()
    r.out(f"All four running from {first} s: MAE vs 25% = {mae:.1f}, "
          f"of normalised shares = {norm:.1f}.")
    r.out()
    png = plot("sched_fig16", {"band, 4 x 25%": run})
    if png:
        r.out(f"![Fig. 16]({Path(png).relative_to('docs')})")
        r.out()


async def pairs(r: Report, d: float, n: int) -> None:
    r.out(f"### Unequal shares, back-to-back unsynchronised launches (idle {n}, 4 in flight), "
          f"{d:g} s")
    r.out()
    r.out("| shares | busy-time ratio | launches | MAE vs shares (1 s windows) |")
    r.out("|---|---|---|---|")
    for shares in ([10, 90], [70, 25, 5]):
        run = await scenario([Client(i, n, inflight=4) for i in range(len(shares))], shares, d)
        w = windows(run)
        busy = [sum(w.get((i, COMPUTE), [0.0])) for i in range(len(shares))]
        ratio = [100 * b / sum(busy) for b in busy]
        mae, _ = errors(run, list(range(len(shares))), 1)
        r.out(f"| {'/'.join(map(str, shares))} | {' / '.join(f'{x:.1f}' for x in ratio)} | "
              f"{' / '.join(str(c.launches) for c in run.clients)} | {mae:.1f} |")
    r.out()


async def eaters(r: Report, d: float) -> None:
    r.out(f"### GPU eaters (one endless kernel per vGPU) at unequal shares, {d:g} s")
    r.out()
    r.out("| shares | preemption | busy-time ratio | MAE vs shares (1 s windows) |")
    r.out("|---|---|---|---|")
    runs: dict[str, Run] = {}
    for shares in ([10, 90], [70, 25, 5]):
        for slice_us in (0, None):
            clients = [Client(i, 2**32 - 1, eater=True) for i in range(len(shares))]
            run = await scenario(clients, shares, d, slice_us=slice_us)
            w = windows(run)
            busy = [sum(w.get((i, COMPUTE), [0.0])) for i in range(len(shares))]
            ratio = [100 * b / (sum(busy) or 1) for b in busy]
            mae, _ = errors(run, list(range(len(shares))), 1)
            mode = "off" if slice_us == 0 else "on"
            r.out(f"| {'/'.join(map(str, shares))} | {mode} | "
                  f"{' / '.join(f'{x:.1f}' for x in ratio)} | {mae:.1f} |")
            runs[f"{'/'.join(map(str, shares))}, preemption {mode}"] = run
    r.out()
    png = plot("band_eaters", runs)
    if png:
        r.out(f"![BAND with eaters]({Path(png).relative_to('docs')})")
        r.out()


async def main(args: argparse.Namespace) -> list[str]:
    r = Report()
    only = set(args.only.split(",")) if args.only else {"fig14", "fig15", "fig16", "pairs",
                                                        "eaters"}
    t = time.perf_counter()
    r.out("In-process runtime, real PTX `idle` kernels of kernels/loop.cu; utilisation is"
          " the scheduler's busy time in 1 s windows.")
    r.out()
    if "fig14" in only:
        await fig14(r, args.duration, args.short, args.long)
    if "fig15" in only:
        await fig15(r, args.duration / 2, args.long // 2)
    if "fig16" in only:
        await fig16(r, args.duration, args.short)
    if "pairs" in only:
        await pairs(r, args.duration / 2, args.short * 4)
    if "eaters" in only:
        await eaters(r, args.duration / 2)
    r.out(f"Total run time {time.perf_counter() - t:.0f} s.")
    return r.lines


if __name__ == "__main__":
    bench_run = benchdoc.Run()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--duration", type=float, default=10.0, help="seconds per scenario")
    p.add_argument("--short", type=int, default=50, help="idle iterations of a short kernel")
    p.add_argument("--long", type=int, default=1000, help="idle iterations of a long kernel")
    p.add_argument("--only", help="comma-separated: fig14,fig15,fig16,pairs,eaters")
    benchdoc.add_write_flag(p)
    a = p.parse_args()
    WRITE_FIGURES = a.write_docs
    lines = trio.run(main, a)
    if a.write_docs:
        benchdoc.write_section("vgpu.py", "Virtual GPU scheduling (scripts/bench/vgpu.py)",
                               "\n".join(lines), bench_run)
