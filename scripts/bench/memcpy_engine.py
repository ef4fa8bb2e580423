"""Engine-level copy benchmark: pipelined vs unpipelined vs a plain numpy copy.

Measures, on one address space over one Vram (pages pre-touched, best of ``--repeat``):
  * htod/dtoh of ``--size`` MiB with chunk 4 MiB at depth 1..4, against ``np.copyto`` of
    the same bytes between two pre-touched host arrays;
  * a chunk sweep 64 KiB..32 MiB at ``--sweep-depth``;
  * the rate of ``Mmu.translate_v`` on ``--addresses`` random addresses.

Run: ``.venv/bin/python scripts/bench/memcpy_engine.py [--size 256] [--repeat 5] [--write-docs]``.
Targets (issue): pipelined <= 1.4x numpy's time; pipelined >= 1.4x faster than depth 1;
translate_v >= 50 M addresses/s. The results, targets and verdicts replace this script's
section of docs/benchmarks.md (with ``--write-docs``).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from gdevd.gpu.copyengine import CopyEngine
from gdevd.gpu.mmu import Mmu
from gdevd.gpu.vram import Vram
from scripts.bench import benchdoc

MiB = 1 << 20
VA = 1 << 32


def best(fn: Callable[[], object], repeat: int) -> float:
    """Best wall time of ``repeat`` calls, in seconds."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


ROWS: list[list[object]] = []
PIPE_VS_NUMPY = 1.4      # pipelined time <= 1.4x np.copyto's
PIPE_VS_DEPTH1 = 1.4     # pipelined >= 1.4x faster than depth 1
TRANSLATE = 50e6         # Mmu.translate_v addresses/s


def row(name: str, chunk: int, depth: int, secs: float, size: int, ref: float) -> None:
    """Print one measurement and keep it for the docs table."""
    gibs = size / secs / (1 << 30)
    print(f"{name:<8} {chunk // 1024:>8} {depth:>5} {secs * 1e3:>9.1f} {gibs:>7.2f} "
          f"{secs / ref:>9.2f}")
    ROWS.append([name, chunk // 1024, depth, f"{secs * 1e3:.1f}", f"{gibs:.2f}",
                 f"{secs / ref:.2f}"])


def markdown(args: argparse.Namespace, targets: list[str]) -> str:
    """The docs/benchmarks.md section body: targets first, then every measured row."""
    return (f"CopyEngine on one address space over one Vram, {args.size} MiB per copy, pages "
            f"pre-touched, best of {args.repeat} (wall time); chunk sweep at depth "
            f"{args.sweep_depth}.\n\n" + "\n".join(f"- {t}" for t in targets) + "\n\n" +
            benchdoc.table(["mode", "chunk KiB", "depth", "ms", "GiB/s", "x numpy"], ROWS))


def main() -> None:
    run = benchdoc.Run()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=256, help="MiB per copy")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sweep-depth", type=int, default=2)
    ap.add_argument("--addresses", type=int, default=16 << 20)
    benchdoc.add_write_flag(ap)
    args = ap.parse_args()
    size = args.size * MiB

    vram = Vram(size)
    mmu = Mmu()
    mmu.set_aperture(0, vram.buffer)
    mmu.map(VA, 0, size)
    src = (np.arange(size, dtype=np.uint32) % 251).astype(np.uint8)
    dst = np.ones(size, np.uint8)  # touched
    vram.buffer[:] = 1  # touch device memory: page faults are not the copy's cost
    bounce = np.ones(4 * 32 * MiB, np.uint8)
    ce = CopyEngine("bench")

    ref = best(lambda: np.copyto(dst, src), args.repeat)
    print(f"{args.size} MiB, best of {args.repeat}")
    print(f"{'mode':<8} {'chunkKiB':>8} {'depth':>5} {'ms':>9} {'GiB/s':>7} {'x numpy':>9}")
    row("numpy", 0, 0, ref, size, ref)

    def htod(chunk: int, depth: int) -> float:
        return best(lambda: ce.htod(mmu, VA, src, chunk=chunk, depth=depth, bounce=bounce),
                    args.repeat)

    def dtoh(chunk: int, depth: int) -> float:
        return best(lambda: ce.dtoh(mmu, dst, VA, chunk=chunk, depth=depth, bounce=bounce),
                    args.repeat)

    results = {}
    for name, fn in (("htod", htod), ("dtoh", dtoh)):
        for depth in (1, 2, 3, 4):
            results[name, depth] = fn(4 * MiB, depth)
            row(name, 4 * MiB, depth, results[name, depth], size, ref)
    assert np.array_equal(dst, src), "dtoh did not bring back what htod wrote"
    print("\nchunk sweep")
    for name, fn in (("htod", htod), ("dtoh", dtoh)):
        for chunk in (64 * 1024, 256 * 1024, MiB, 4 * MiB, 16 * MiB, 32 * MiB):
            row(name, chunk, args.sweep_depth, fn(chunk, args.sweep_depth), size, ref)

    rng = np.random.default_rng(0)
    vas = (VA + rng.integers(0, size, args.addresses, dtype=np.uint64)).astype(np.uint64)
    secs = best(lambda: mmu.translate_v(vas), args.repeat)
    rate = args.addresses / secs
    print(f"\ntranslate_v: {rate / 1e6:.1f} M addresses/s "
          f"({args.addresses} addresses in {secs * 1e3:.1f} ms)")
    targets = [f"translate_v: {rate / 1e6:.1f} M addresses/s ({args.addresses} random "
               f"addresses; target >= {TRANSLATE / 1e6:.0f} M/s): "
               f"{benchdoc.verdict(rate >= TRANSLATE)}"]
    for name in ("htod", "dtoh"):
        pipe = min(results[name, d] for d in (2, 3, 4))
        vs_numpy, vs_depth1 = pipe / ref, results[name, 1] / pipe
        print(f"{name}: best pipelined {vs_numpy:.2f}x numpy's time, "
              f"{vs_depth1:.2f}x faster than depth 1")
        targets.append(f"{name}: best pipelined (depth 2-4, 4 MiB chunks) {vs_numpy:.2f}x "
                       f"np.copyto's time (target <= {PIPE_VS_NUMPY}x): "
                       f"{benchdoc.verdict(vs_numpy <= PIPE_VS_NUMPY)}; {vs_depth1:.2f}x faster "
                       f"than depth 1 (target >= {PIPE_VS_DEPTH1}x): "
                       f"{benchdoc.verdict(vs_depth1 >= PIPE_VS_DEPTH1)}")
    if args.write_docs:
        benchdoc.write_section("memcpy_engine.py", "Copy engine: pipelined copies and "
                               "address translation (scripts/bench/memcpy_engine.py)",
                               markdown(args, targets), run)
    ce.close()
    mmu.close()
    vram.close()


if __name__ == "__main__":
    main()
