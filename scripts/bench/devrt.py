"""Dynamic parallelism on the PTX engine: the cost of a device-side launch.

Runs tests/ptx/data/devrt.ptx's ``parent`` (thread 0 of each of ``--blocks`` blocks
launches a one-block child grid of 32 threads) and ``nest`` (a chain of 25 one-thread
grids, CUDA's depth limit) on each engine policy, children compiled under ``jit``, and
prints one JSON object per line: the kernel, the engine, child grids, wall seconds of the
best of ``--repeat`` launches, child grids per second, and the jit/interp ratio of that
rate.  Correctness is the tests' job (tests/ptx/test_devrt.py); this only times.

Usage: .venv/bin/python scripts/bench/devrt.py [--blocks N] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time

import numpy as np

from gdevd.gpu.mmu import Mmu
from gdevd.gpu.ptx import jit, load_module
from gdevd.gpu.vram import Vram

PTX = pathlib.Path(__file__).resolve().parents[2] / "tests" / "ptx" / "data" / "devrt.ptx"
BASE = 1 << 36


def _tree(mod, mmu, kernel: str, grid: int, block: int, params: bytes, arena: int):
    slot = mod.arena_slot()
    return mod.launch(kernel, (grid, 1, 1), (block, 1, 1), params, mmu, BASE,
                      device_runtime=(arena, slot, 4096))


def _best(make, repeat: int) -> tuple[float, int]:
    best, grids = float("inf"), 0
    for _ in range(repeat):
        tree = make()
        t0 = time.perf_counter()
        while not tree.run():
            pass
        best, grids = min(best, time.perf_counter() - t0), tree.grids - 1
    return best, grids


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", type=int, default=512)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    size = 64 << 20
    vram, mmu = Vram(size), Mmu()
    mmu.set_aperture(0, vram.buffer)
    mmu.map(BASE, 0, size)
    out, arena = BASE + (1 << 20), BASE + (32 << 20)
    mmu.write(out, bytes(4 * 32 * args.blocks))
    rates = {}
    for engine in ("interp", "jit"):
        jit.set_engine(engine)
        mod = load_module(PTX.read_text(), "devrt")
        mod.start_compile(wait=engine == "jit")
        ptr = out.to_bytes(8, "little")
        runs = {"parent": (args.blocks, 32, ptr),
                "nest": (1, 1, ptr * 2 + (0).to_bytes(4, "little") + (24).to_bytes(4, "little"))}
        for name, (grid, block, params) in runs.items():
            secs, grids = _best(lambda m=mod, n=name, g=grid, b=block, p=params:
                                _tree(m, mmu, n, g, b, p, arena), args.repeat)
            rates[(name, engine)] = grids / secs
            row = {"kernel": name, "engine": engine, "child_grids": grids,
                   "seconds": round(secs, 4), "grids_per_s": round(grids / secs)}
            if engine == "jit":
                row["jit_over_interp"] = round(rates[(name, "jit")] /
                                               rates[(name, "interp")], 2)
            print(json.dumps(row))
    assert np.frombuffer(mmu.read(out, 4 * 32 * args.blocks), np.int32).any()


if __name__ == "__main__":
    main()
