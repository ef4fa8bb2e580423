"""Per-call cost of direct (small, on-the-loop) copies through the Gdev API, in-process.

Measures ``gmemcpy_to_device`` and ``gmemcpy_from_device`` of 64 B and 4 KiB, uncontended
(one context) and with another vGPU's context active on the copy engines' accounting, as
process CPU time per call (the machine is shared, so CPU time rather than wall time), the
best of ``--reps`` runs.  This is the cost the scheduler's accounting of direct copies adds
(docs/scheduling.md, "Direct copies"); nothing is asserted.

    .venv/bin/python scripts/bench/direct_copy.py [--calls 20000] [--reps 5]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import trio

from gdevd import runtime as rt


async def _per_call_us(h: rt.Handle, addr: int, host: np.ndarray, calls: int,
                       to_device: bool) -> float:
    size = host.nbytes
    t0 = time.process_time()
    if to_device:
        for _ in range(calls):
            await rt.gmemcpy_to_device(h, addr, host, size)
    else:
        for _ in range(calls):
            await rt.gmemcpy_from_device(h, host, addr, size)
    return (time.process_time() - t0) / calls * 1e6


async def _bench(system: rt.GdevSystem, calls: int, reps: int, contended: bool) -> None:
    h = await rt.gopen(system, 0)
    other = await rt.gopen(system, 1)
    addr = await rt.gmalloc(h, 1 << 16)
    oaddr = await rt.gmalloc(other, 1 << 16)
    label = "another vGPU active" if contended else "uncontended"
    for size in (64, 4096):
        host = np.zeros(size, dtype=np.uint8)
        for to_device in (True, False):
            best = float("inf")
            for _ in range(reps):
                if contended:       # keep vd1 "active" (used memory within its period)
                    await rt.gmemcpy_to_device(other, oaddr, host, size)
                best = min(best, await _per_call_us(h, addr, host, calls, to_device))
            verb = "to_device  " if to_device else "from_device"
            print(f"{label:20s} {verb} {size:5d} B: {best:6.2f} us CPU/call")
    await rt.gclose(h)
    await rt.gclose(other)


def main() -> None:
    """Parse the arguments and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()

    async def run() -> None:
        async with rt.GdevSystem(rt.GdevConfig(memory=64 << 20)) as system:
            for contended in (False, True):
                await _bench(system, args.calls, args.reps, contended)
    trio.run(run)


if __name__ == "__main__":
    main()
