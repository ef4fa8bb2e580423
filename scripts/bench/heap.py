"""Device malloc/free (the device heap, docs/ptx-engine.md) on both engines in one run.

Times tests/ptx/data/heap.ptx's ``churn`` kernel (each thread: ``--rounds`` rounds of
malloc(16) and free) on the interpreter and on the compiling engine (compiled before the
first timed launch) and prints one JSON object per engine: malloc/free pairs per second
(wall clock, best of ``--repeat``), and the compiled engine's ratio to the interpreter.
Correctness is the tests' job (tests/ptx/test_heap.py); this only times.

Usage: .venv/bin/python scripts/bench/heap.py [--blocks N] [--rounds N] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time

import numpy as np

from gdevd.gpu.heap import HeapAllocator
from gdevd.gpu.ptx import jit, load_module
from tests.ptx.helpers import Device

PTX = pathlib.Path(__file__).resolve().parents[2] / "tests" / "ptx" / "data" / "heap.ptx"
THREADS = 256


def pairs_per_second(engine: str, blocks: int, rounds: int, repeat: int) -> float:
    """Best malloc/free pairs per second of ``churn`` over ``blocks`` blocks on ``engine``."""
    jit.set_engine(engine)
    dev = Device()
    mod = load_module(PTX.read_text(), "heap")
    heap = HeapAllocator(dev.alloc(1 << 20, 4096), 1 << 20)
    got = dev.alloc(4 * blocks * THREADS)
    dev.launch(mod, "churn", (1,), (32,), got, 1, 16, heap=heap)     # compiled, warm
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        dev.launch(mod, "churn", (blocks,), (THREADS,), got, rounds, 16, heap=heap)
        best = min(best, time.perf_counter() - t0)
    assert (dev.get(got, blocks * THREADS, np.int32) == rounds).all() and heap.used == 0
    return blocks * THREADS * rounds / best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rates = {e: pairs_per_second(e, args.blocks, args.rounds, args.repeat)
             for e in ("interp", "jit")}
    for engine, rate in rates.items():
        print(json.dumps({"bench": "heap", "engine": engine, "blocks": args.blocks,
                          "threads": THREADS, "rounds": args.rounds,
                          "pairs_per_s": round(rate),
                          "vs_interp": round(rate / rates["interp"], 1)}))


if __name__ == "__main__":
    main()
