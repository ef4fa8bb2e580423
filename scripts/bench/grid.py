"""The GPU grid over a compressed synthetic month of host activity (the GPU-grid paper's
Figs. 4-6 analogue): three gdevd nodes on one machine, each with a host replaying its own
trace (idle nights, interactive days with short breaks, busy bursts), and a grid client
multiplying matrices in pieces for as long as the hosts run. Three runs on the same traces:

* ``alone``: hosts only (their frame rate without guests, the reference on this machine);
* ``cooperative``: the grid (busy / partially idle / fully idle, periodic and continuous),
  its contexts on each node's guest vGPU (the daemon's guest class);
* ``screensaver``: the baseline that runs guests only once the host has been idle for the
  screensaver timeout (fully idle periods only), on the same guest vGPUs.

Reports guest pieces (every result checked), per node the frames kept (completed before the
next frame tick) in interactive and busy periods, detected idle time and transitions per
minute. Prints; writes its section of docs/benchmarks.md only with ``--write-docs``.

    .venv/bin/python scripts/bench/grid.py [--days 30] [--day-s 3] [--quick] [--write-docs]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from libgdev.grid import GdevNodePlugin, GridClient
from libgdev.grid.host import FRAME_ROWS, frame_rate_kept
from libgdev.grid.matmul import reference
from scripts.bench import benchdoc
from tests.daemon.conftest import start_gdevd, stop_gdevd
from tests.grid.conftest import GUEST_VGPU, donate

ROOT = Path(__file__).resolve().parents[2]

# Node profiles (fractions of the working part of a day): a desk often left alone, a writer
# at the keyboard all day, a GPU developer whose programs keep the GPU busy at times.
PROFILES = {"desk": {"interactive": 0.3, "idle": 0.6, "busy": 0.1},
            "writer": {"interactive": 0.7, "idle": 0.25, "busy": 0.05},
            "developer": {"interactive": 0.45, "idle": 0.25, "busy": 0.3}}
NIGHT = 0.35          # the part of each day nobody is at the machine
SAVER_S = 0.5         # screensaver timeout (compressed: stands for minutes without input)
PERIOD_S = (0.4, 1.2)  # length of one working-hours period (compressed)


def month_trace(profile: dict, days: int, day_s: float, rng: random.Random) -> list:
    """(seconds, activity) periods of ``days`` compressed days of ``day_s`` seconds each."""
    periods = []
    for _ in range(days):
        periods.append((day_s * NIGHT, "idle"))
        left = day_s * (1 - NIGHT)
        while left > 0.05:
            activity = rng.choices(list(profile), weights=list(profile.values()))[0]
            seconds = min(rng.uniform(*PERIOD_S), left)
            periods.append((seconds, activity))
            left -= seconds
    return periods


def write_trace(periods: list, path: Path) -> None:
    path.write_text("".join(f"{s:.3f} {a}\n" for s, a in periods))


def run(mode: str, traces: list[Path], tmp: Path, fps: float) -> dict:
    """One run on fresh daemons and a fresh cluster; its measurements."""
    from distributed import Client, LocalCluster

    daemons, hosts = [start_gdevd() for _ in traces], []
    for d in daemons:
        donate(d, GUEST_VGPU)
    saver_files = {i: str(tmp / f"{mode}-activity{i}") for i in range(len(traces))}
    try:
        with LocalCluster(n_workers=len(traces), threads_per_worker=1, processes=True,
                          dashboard_address=":0", worker_dashboard_address=":0") as cluster, \
                Client(cluster) as client:
            plugin = GdevNodePlugin(mounts={i: d.mount for i, d in enumerate(daemons)}, fps=fps,
                                    minor=GUEST_VGPU, sample_s=0.1, wait_s=0.5,
                                    saver_files=saver_files if mode == "screensaver" else None,
                                    saver_s=SAVER_S)
            client.register_plugin(plugin)
            g = GridClient(client)
            reports = [tmp / f"{mode}-report{i}.json" for i in range(len(traces))]
            hosts = [subprocess.Popen([sys.executable, "-m", "libgdev.grid.host", d.mount,
                                       str(t), "--fps", str(fps), "--report", str(r),
                                       "--activity-file", saver_files[i]])
                     for i, (d, t, r) in enumerate(zip(daemons, traces, reports, strict=True))]
            t0, pieces, rounds = time.monotonic(), 0, 0
            while mode != "alone" and any(h.poll() is None for h in hosts):
                a, b = _operands(rounds)
                assert np.array_equal(g.matmul(a, b, rows=16), reference(a, b))
                pieces, rounds = pieces + a.shape[0] // 16, rounds + 1
            for h in hosts:
                h.wait()
            wall = time.monotonic() - t0
            nodes = g.status() if mode != "alone" else {}
        return {"pieces": pieces, "wall_s": wall, "duplicates": g.duplicates,
                "hosts": [json.loads(r.read_text()) for r in reports],
                "nodes": sorted(nodes.values(), key=lambda s: s["name"])}
    finally:
        for h in hosts:
            h.kill()
        for d in daemons:
            stop_gdevd(d)


def _operands(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 1 << 32, (16 * 12, 64), dtype=np.uint32),
            rng.integers(0, 1 << 32, (64, 64), dtype=np.uint32))


def kept(report: dict, activity: str) -> str:
    r = report[activity]
    return f"{r['on_time'] / r['ticks']:.1%}" if r["ticks"] else "-"


def table(results: dict, names: list[str]) -> str:
    lines = ["| run | guest pieces | pieces/s | node | frames kept (interactive / busy / all) "
             "| idle detected | transitions/min |", "|---|---|---|---|---|---|---|"]
    for mode, res in results.items():
        for i, name in enumerate(names):
            host = res["hosts"][i]
            node = res["nodes"][i] if res["nodes"] else None
            idle = transitions = "-"
            if node:
                s = node["seconds_in_state"]
                idle = f"{(s['partially-idle'] + s['fully-idle']) / sum(s.values()):.0%}"
                transitions = f"{node['transitions_per_min']:.0f}"
            head = (f"| {mode} | {res['pieces']} | {res['pieces'] / res['wall_s']:.2f}"
                    if i == 0 else "| | |")
            lines.append(f"{head} | {name} | {kept(host, 'interactive')} / {kept(host, 'busy')}"
                         f" / {frame_rate_kept(host):.1%} | {idle} | {transitions} |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--days", type=int, default=30)
    p.add_argument("--day-s", type=float, default=3.0, help="seconds per compressed day")
    p.add_argument("--fps", type=float, default=30.0)
    p.add_argument("--seed", type=int, default=2013)
    p.add_argument("--quick", action="store_true", help="4 days (a smoke run)")
    benchdoc.add_write_flag(p)
    args = p.parse_args()
    record = benchdoc.Run()
    days = 4 if args.quick else args.days
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="gdev-grid-bench-") as tmpdir:
        tmp = Path(tmpdir)
        traces = []
        for name, profile in PROFILES.items():
            traces.append(tmp / f"{name}.trace")
            write_trace(month_trace(profile, days, args.day_s, rng), traces[-1])
        results = {mode: run(mode, traces, tmp, args.fps)
                   for mode in ("alone", "cooperative", "screensaver")}
    coop, saver = results["cooperative"]["pieces"], results["screensaver"]["pieces"]
    body = (f"{days} compressed days of {args.day_s:g} s on three nodes (profiles "
            f"{', '.join(PROFILES)}), F = {args.fps:g}, guest pieces of 16 rows of a uint32 "
            f"(16x12) x 64 by 64 x 64 product (every result checked, duplicates "
            f"{results['cooperative']['duplicates'] + results['screensaver']['duplicates']}); "
            f"host frames of {'/'.join(str(r) for r in FRAME_ROWS.values())} rows.\n\n"
            f"{table(results, list(PROFILES))}\n\n"
            f"- guest work, cooperative vs screensaver: {coop} vs {saver} pieces: "
            f"**{coop / max(saver, 1):.2f}x**\n")
    print(body)
    if args.write_docs:
        benchdoc.write_section("grid.py", "GPU grid (scripts/bench/grid.py)", body, record)


if __name__ == "__main__":
    main()
