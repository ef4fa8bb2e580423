"""The GPU grid's guest class: a host drawing frames beside a guest that computes.

A *host* context draws frames: at F frames per second (``--fps``, 30) it launches one frame
kernel (``idle --frame`` iterations) and waits for it; a frame that ends after the next
frame's time pushes the next one back, so its frame rate drops.  A *guest* computes pieces
of work back to back (``loop`` over ``--size`` threads, ``--iters`` iterations each).
Scenarios, ``--duration`` seconds each, on one vGPU:

* host alone; guest alone (a dedicated GPU: the guest's reference throughput);
* plain sharing: the guest is an ordinary host context beside the host;
* guest class: the guest is a guest (periodic mode while the host draws);
* host leaves: the host draws for the first half only; the guest goes continuous.

For each: the host's frame rate (percent of F), the guest's throughput (percent of its
dedicated throughput), and the guest mode's transitions (seconds from the start).  Prints a
table; writes its section of docs/benchmarks.md (and docs/figures/grid_modes.png, the
modes' timeline) only with ``--write-docs``.

    .venv/bin/python scripts/bench/guests.py [--duration 6] [--fps 30] [--frame 2000]
"""

from __future__ import annotations

import argparse
import struct
from pathlib import Path

import trio

from gdevd import runtime as rt
from gdevd.runtime.sched import COMPUTE
from scripts.bench import benchdoc

ROOT = Path(__file__).resolve().parents[2]

PTX = (ROOT / "kernels" / "loop.ptx").read_bytes()


async def _open(s: rt.GdevSystem, guest: bool) -> tuple[rt.Handle, int, int]:
    h = await rt.gopen(s, 0)
    if guest:
        await rt.gset_guest(h, True)
    code = await rt.gmalloc(h, len(PTX))
    await rt.gmemcpy_to_device(h, code, PTX, len(PTX))
    return h, code, await rt.gmalloc(h, 1 << 20)


async def host(s: rt.GdevSystem, a: argparse.Namespace, until: float) -> int:
    """Draw frames at ``a.fps`` until ``until``; the number of frames drawn."""
    h, code, out = await _open(s, False)
    k = rt.GdevKernel(code, len(PTX), "idle", params=struct.pack("<QI", out, a.frame))
    await rt.gsync(h, await rt.glaunch(h, k))          # decode before the clock starts
    frames, t = 0, trio.current_time()
    while t < until:
        await rt.gsync(h, await rt.glaunch(h, k))
        frames += 1
        t = max(t + 1 / a.fps, trio.current_time())    # a late frame pushes the next back
        await trio.sleep_until(t)
    await rt.gclose(h)
    return frames


async def guest(s: rt.GdevSystem, a: argparse.Namespace, as_guest: bool, until: float,
                mid: float) -> tuple[int, int]:
    """Compute pieces until ``until``; pieces finished before and after ``mid``."""
    h, code, out = await _open(s, as_guest)
    k = rt.GdevKernel(code, len(PTX), "loop", grid=((a.size + 255) // 256, 1, 1),
                      block=(256, 1, 1), params=struct.pack("<QII", out, a.size, a.iters))
    done = [0, 0]
    while trio.current_time() < until:
        await rt.gsync(h, await rt.glaunch(h, k))
        done[trio.current_time() >= mid] += 1
    await rt.gclose(h)
    return done[0], done[1]


async def scenario(a: argparse.Namespace, with_host: bool, with_guest: bool,
                   as_guest: bool = True, host_share: float = 1.0) -> dict:
    """Run one scenario; frames, guest pieces (first half, second half), transitions."""
    async with rt.GdevSystem(rt.GdevConfig(vgpus=1)) as s:
        t0 = trio.current_time()
        end, mid = t0 + a.duration, t0 + a.duration / 2
        res: dict = {"frames": 0, "pieces": (0, 0)}

        async def run_host() -> None:
            res["frames"] = await host(s, a, t0 + a.duration * host_share)

        async def run_guest() -> None:
            res["pieces"] = await guest(s, a, as_guest, end, mid)
        async with trio.open_nursery() as n:
            if with_host:
                n.start_soon(run_host)
            if with_guest:
                n.start_soon(run_guest)
        st = s.scheduler.guests.state_of(0)
        res["log"] = [] if st is None else [(t - t0, m) for t, m in st.log]
        res["share"] = s.scheduler.vres(s.virtual[0], COMPUTE).usage.compute_s
    return res


async def main(a: argparse.Namespace) -> tuple[list[str], dict[str, list]]:
    lines: list[str] = []
    logs: dict[str, list] = {}

    def out(line: str = "") -> None:
        print(line, flush=True)
        lines.append(line)
    await scenario(a, False, True)              # warm-up: the kernels' native code is built
    ded = await scenario(a, False, True)
    base = sum(ded["pieces"]) / a.duration
    out(f"Host: one frame kernel (idle {a.frame}) per frame at F = {a.fps}; guest: loop "
        f"{a.size} x {a.iters} pieces back to back; {a.duration:g} s per scenario.  Guest "
        f"alone (dedicated): {base:.1f} pieces/s (its transitions: "
        f"{_log(ded['log'])}).")
    out()
    out("| scenario | host frames/s (% of F) | guest pieces/s (% of dedicated) | "
        "guest mode transitions (s: mode) |")
    out("|---|---|---|---|")
    for label, kw in (("host alone", dict(with_host=True, with_guest=False)),
                      ("plain sharing (guest as a host)", dict(with_host=True,
                                                               with_guest=True,
                                                               as_guest=False)),
                      ("guest class", dict(with_host=True, with_guest=True)),
                      ("host leaves halfway", dict(with_host=True, with_guest=True,
                                                   host_share=0.5))):
        r = await scenario(a, **kw)
        logs[label] = r["log"]
        span = a.duration * kw.get("host_share", 1.0)
        fps = r["frames"] / span
        pieces = sum(r["pieces"]) / a.duration
        extra = ""
        if kw.get("host_share"):
            first, second = (p / (a.duration / 2) for p in r["pieces"])
            extra = f" (halves: {100 * first / base:.0f}% / {100 * second / base:.0f}%)"
        out(f"| {label} | {fps:.1f} ({100 * fps / a.fps:.0f}%) | "
            f"{pieces:.1f} ({100 * pieces / base:.0f}%){extra} | {_log(r['log'])} |")
    return lines, logs


MODES = ("periodic", "continuous")


def plot(logs: dict[str, list], duration: float) -> str | None:
    """The guest's mode over time in each scenario with a guest; the PNG's path relative to
    docs/, or None without matplotlib."""
    plt = benchdoc.pyplot()
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(7, 2.6))
    for i, (label, log) in enumerate((k, v) for k, v in logs.items() if v):
        times = [0.0] + [t for t, _ in log] + [duration]
        levels = [0] + [MODES.index(m) if m in MODES else -1 for _, m in log]
        ax.step(times, [*levels, levels[-1]], where="post", label=label, lw=2 - 0.5 * i)
    ax.set_yticks([-1, 0, 1], ["none", *MODES])
    ax.set_xlabel("time (s)")
    ax.set_xlim(0, duration)
    ax.legend(fontsize=7)
    ax.set_title("Guest mode (GPU grid: periodic on a partially idle GPU, continuous on an "
                 "idle one)", fontsize=8)
    return benchdoc.save_figure(fig, "grid_modes")


def _log(log: list[tuple[float, str]]) -> str:
    return ", ".join(f"{t:.2f}: {m}" for t, m in log) or "none"


def cli() -> None:
    run = benchdoc.Run()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--duration", type=float, default=6.0, help="seconds per scenario")
    p.add_argument("--fps", type=float, default=30.0, help="F, host frames per second")
    p.add_argument("--frame", type=int, default=2000, help="idle iterations of a frame")
    p.add_argument("--size", type=int, default=256, help="threads of a guest piece")
    p.add_argument("--iters", type=int, default=2000, help="iterations of a guest piece")
    benchdoc.add_write_flag(p)
    a = p.parse_args()
    lines, logs = trio.run(main, a)
    if a.write_docs:
        png = plot(logs, a.duration)
        if png:
            lines += ["", f"![guest modes]({png})"]
        benchdoc.write_section("guests.py", "GPU grid: a host's frames beside a guest "
                               "(scripts/bench/guests.py)", "\n".join(lines), run)


if __name__ == "__main__":
    cli()
