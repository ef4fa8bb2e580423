"""Fig. 12 of the Gdev paper: k small tasks plus one large high-priority task on a device too
small for them all, with and without the temporal device swap area.

Every task is its own context on the one vGPU (share 100 %) of a ``--memory`` device.  A
small task (priority 20) holds three n x n uint32 matrices and a ``--ballast`` buffer of
idle data, and runs ``--iters`` MADD launches, checking each result; the large task
(priority 30) holds ``--large`` MiB of data plus its matrices and does the same.  Beyond
what fits, allocations evict the lowest-priority idle objects; launches bring a context's
objects back.  Every task must finish with correct results; the script prints the makespan
(first gopen to last result) for each k, with the temporal swap area (10 % of the device)
and without it (0 %: evictions go straight to host swap).

``python scripts/bench/swap.py [--ks 2,4,8,12] [--n 256] [--write-docs]``; the table replaces the
``swap.py`` section of docs/benchmarks.md (inside the hand-written "memory" section).
"""

from __future__ import annotations

import argparse
import struct
import time
from pathlib import Path

import numpy as np
import trio

from gdevd import runtime as rt
from scripts.bench import benchdoc

ROOT = Path(__file__).resolve().parents[2]
PTX = (ROOT / "kernels" / "madd.ptx").read_bytes()

MiB = 1 << 20


async def task(s: rt.GdevSystem, seed: int, n: int, extra: int, iters: int,
               prio: dict[int, int], level: int, done: list[float], t0: float) -> None:
    """One task: allocate, upload, ``iters`` x (launch, check), free."""
    h = await rt.gopen(s, 0)
    prio[h.cid] = level
    rng = np.random.default_rng(seed)
    code = await rt.gmalloc(h, len(PTX))
    await rt.gmemcpy_to_device(h, code, PTX, len(PTX))
    size = 4 * n * n
    a, b = (rng.integers(0, 1 << 30, n * n, dtype=np.uint32) for _ in "ab")
    va, vb, vc = [await rt.gmalloc(h, size) for _ in range(3)]
    await rt.gmemcpy_to_device(h, va, a, size)
    await rt.gmemcpy_to_device(h, vb, b, size)
    ballast = np.full(extra, seed & 0xFF, np.uint8)
    vx = await rt.gmalloc(h, extra)
    await rt.gmemcpy_to_device(h, vx, ballast, extra)
    k = rt.GdevKernel(code, len(PTX), "add", grid=(-(-n // 16), -(-n // 16), 1),
                      block=(16, 16, 1), params=struct.pack("<QQQI4x", va, vb, vc, n))
    out = np.empty(n * n, np.uint32)
    for _ in range(iters):
        await rt.gsync(h, await rt.glaunch(h, k))
        await rt.gmemcpy_from_device(h, out, vc, size)
        if not np.array_equal(out, a + b):
            raise AssertionError(f"task {seed}: wrong MADD result")
        await trio.sleep(0)
    back = np.empty(extra, np.uint8)
    await rt.gmemcpy_from_device(h, back, vx, extra)
    if not np.array_equal(back, ballast):
        raise AssertionError(f"task {seed}: its data came back corrupted")
    await rt.gclose(h)
    done.append(time.perf_counter() - t0)


async def makespan(args: argparse.Namespace, k: int, swap_percent: int) -> tuple[float, int]:
    """(seconds until every task finished, bytes swapped out) for k small tasks + 1 large."""
    config = rt.GdevConfig(memory=args.memory * MiB, vgpus=1, swap_percent=swap_percent)
    async with rt.GdevSystem(config) as s:
        prio: dict[int, int] = {}
        s.priority_of = lambda h: prio.get(h.cid, 20)
        done: list[float] = []
        t0 = time.perf_counter()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(task, s, 1000, args.n, args.large * MiB, args.iters, prio, 30,
                               done, t0)
            for i in range(k):
                nursery.start_soon(task, s, i, args.n, args.ballast * MiB, args.iters, prio,
                                   20, done, t0)
        assert len(done) == k + 1
        s.check_invariants()
        return max(done), s.virtual[0].swap.swap_out_bytes


def main() -> None:
    """Print the makespans with and without the temporal swap area."""
    run = benchdoc.Run()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--memory", type=int, default=32, help="device memory, MiB")
    p.add_argument("--n", type=int, default=256, help="matrix side")
    p.add_argument("--ballast", type=int, default=3, help="idle MiB per small task")
    p.add_argument("--large", type=int, default=12, help="MiB of the large task")
    p.add_argument("--iters", type=int, default=3, help="launches per task")
    p.add_argument("--ks", default="2,4,8,12", help="numbers of small tasks")
    p.add_argument("--repeat", type=int, default=3, help="runs per cell (the best is kept)")
    benchdoc.add_write_flag(p)
    args = p.parse_args()
    per_small = 3 * 4 * args.n ** 2 / MiB + args.ballast
    print(f"device {args.memory} MiB; small task {per_small:.2f} MiB (prio 20); large task "
          f"{args.large + 3 * 4 * args.n ** 2 / MiB:.2f} MiB (prio 30); {args.iters} MADD "
          f"launches of {args.n}x{args.n} each")
    print(f"{'k':>3} {'demand MiB':>10} {'swap 10% s':>11} {'swapped MiB':>11} "
          f"{'swap 0% s':>10} {'swapped MiB':>11}")
    rows = []
    for k in (int(x) for x in args.ks.split(",")):
        demand = k * per_small + args.large + 3 * 4 * args.n ** 2 / MiB
        with_area = min(trio.run(makespan, args, k, 10) for _ in range(args.repeat))
        without = min(trio.run(makespan, args, k, 0) for _ in range(args.repeat))
        print(f"{k:3d} {demand:10.1f} {with_area[0]:11.3f} {with_area[1] / MiB:11.1f} "
              f"{without[0]:10.3f} {without[1] / MiB:11.1f}")
        rows.append([k, f"{demand:.1f}", f"{with_area[0]:.3f} s", f"{with_area[1] / MiB:.1f}",
                     f"{without[0]:.3f} s", f"{without[1] / MiB:.1f}"])
    if args.write_docs:
        benchdoc.write_section("swap.py", "", benchdoc.table(
            ["k", "demand MiB", "makespan, 10 % temporal swap", "swapped MiB",
             "makespan, no device swap", "swapped MiB"], rows), run)


if __name__ == "__main__":
    main()
