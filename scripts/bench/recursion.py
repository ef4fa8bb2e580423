"""Recursive device functions on the interpreter (gdevd/gpu/ptx/callstack.py): rates and ratios.

Runs tests/ptx/data/recursion.ptx's ``fib_kernel`` (real calls) and ``fib_loop_kernel`` (the
same values by a loop) over the same inputs, at one depth for all threads (uniform) and at
a different depth per thread (divergent), and prints one JSON object per row: process-CPU
seconds of the best of ``--repeat`` launches, thread-calls per second (one per activation),
thread-instructions per second, and each recursive row's rate of thread-instructions
relative to the loop on the same inputs (both on the interpreter, one run, so load on the
machine cancels).  With ``--jit`` the loop also runs compiled (wall seconds): how far the
interpreted recursion is from the compiled engine.  Correctness is
tests/ptx/test_recursion.py's job.

Usage: .venv/bin/python scripts/bench/recursion.py [--threads N] [--depth D] [--repeat R]
       [--jit]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time

import numpy as np

from gdevd.gpu.ptx import jit, load_module
from tests.ptx.helpers import Device

DATA = pathlib.Path(__file__).resolve().parents[2] / "tests" / "ptx" / "data"


def calls(n: int) -> int:
    """Activations of fib(n)."""
    a, b = 1, 1          # calls(0), calls(1)
    for _ in range(n - 1):
        a, b = b, a + b + 1
    return a if n == 0 else b


def timed(mod, kernel: str, n: np.ndarray, repeat: int, clock) -> tuple[float, object]:
    """Best seconds of ``repeat`` launches over inputs ``n`` (blocks of 64), and a launch."""
    dev = Device()
    pn, out = dev.put(n), dev.alloc(4 * n.size)
    best, launch = float("inf"), None
    for _ in range(repeat):
        t0 = clock()
        launch = dev.launch(mod, kernel, (n.size // 64,), (64,), out, pn)
        best = min(best, clock() - t0)
    return best, launch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=4096)
    ap.add_argument("--depth", type=int, default=14)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jit", action="store_true")
    args = ap.parse_args()
    jit.set_engine("interp")
    mod = load_module((DATA / "recursion.ptx").read_text(), "recursion")
    t = np.arange(args.threads)
    for shape, n in (("uniform", np.full(args.threads, args.depth, np.int32)),
                     ("divergent", (t % (args.depth + 1)).astype(np.int32))):
        loop_s, loop = timed(mod, "fib_loop_kernel", n, args.repeat, time.process_time)
        rec_s, rec = timed(mod, "fib_kernel", n, args.repeat, time.process_time)
        loop_rate = loop.stats.thread_instructions / loop_s
        rate = rec.stats.thread_instructions / rec_s
        print(json.dumps({"row": f"fib {shape}", "threads": args.threads, "depth": args.depth,
                          "seconds": round(rec_s, 4),
                          "thread_calls_per_s": round(sum(calls(int(x)) for x in n) / rec_s),
                          "thread_instr_per_s": round(rate),
                          "loop_seconds": round(loop_s, 4),
                          "loop_thread_instr_per_s": round(loop_rate),
                          "rate_vs_loop": round(rate / loop_rate, 3)}))
        if args.jit:
            jit.set_engine("jit")
            native = load_module((DATA / "recursion.ptx").read_text(), "recursion")
            native.start_compile(wait=True)
            jit_s, _ = timed(native, "fib_loop_kernel", n, args.repeat, time.perf_counter)
            print(json.dumps({"row": f"fib loop {shape} compiled", "seconds": round(jit_s, 5),
                              "recursion_vs_compiled_loop_seconds": round(rec_s / jit_s, 1)}))
            jit.set_engine("interp")


if __name__ == "__main__":
    main()
