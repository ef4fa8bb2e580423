"""The cost of reading /proc/gdev in-process: ``python scripts/bench/proctree.py``.

Builds a system (1 GPU, 4 vGPUs) with ``--contexts`` open contexts that each allocated and
copied, then times :func:`procfs.read_entry` of one small vGPU entry, of the ``contexts``
table, of ``metrics`` and of the whole tree (every global and per-vGPU entry, what one
gmonitor refresh reads).  Prints microseconds per read (median of ``--repeat`` rounds).
Run it under two source trees (``PYTHONPATH=OTHER_TREE``) to compare them in one sitting.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
import trio

from gdevd import runtime as rt
from procfs import ENTRIES, GLOBAL, PER_VGPU, read_entry

BY_NAME = {e.name: e for e in ENTRIES}


def _median_us(fn: Callable[[], object], n: int, repeat: int) -> float:
    rounds = []
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        rounds.append((time.perf_counter() - t) / n * 1e6)
    return statistics.median(rounds)


def _whole_tree(system: rt.GdevSystem) -> None:
    for e in GLOBAL:
        read_entry(e, system)
    for v in system.virtual:
        for e in PER_VGPU:
            read_entry(e, v)


async def measure(args: argparse.Namespace) -> dict[str, float]:
    """Microseconds per read of each case."""
    config = rt.GdevConfig(memory=256 << 20, swap_percent=0, host_swap=0)
    async with rt.GdevSystem(config) as system:
        data = np.arange(1 << 14, dtype=np.uint8)
        for i in range(args.contexts):
            h = await rt.gopen(system, i % 4)
            va = await rt.gmalloc(h, data.nbytes)
            await rt.gmemcpy_to_device(h, va, data, data.nbytes)
        v0, r = system.virtual[0], args.repeat
        return {
            "vd0/memory_used": _median_us(lambda: read_entry(BY_NAME["memory_used"], v0),
                                          2000, r),
            "contexts": _median_us(lambda: read_entry(BY_NAME["contexts"], system), 200, r),
            "metrics": _median_us(lambda: read_entry(BY_NAME["metrics"], system), 50, r),
            "whole tree": _median_us(lambda: _whole_tree(system), 20, r),
        }


def main() -> None:
    """Print the table."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--contexts", type=int, default=16)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    for name, us in trio.run(measure, args).items():
        print(f"{name:>16}: {us:9.1f} us per read")


if __name__ == "__main__":
    main()
