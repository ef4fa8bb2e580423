"""The CUDA driver API through its three bindings: what the layer costs, and event timing.

    python scripts/bench/cuda.py [--mount MNT] [--repeat N] [--write-docs]

For each binding (in-process ``gdevd.gdev``, ``kcuda`` over a runtime on its own trio thread,
``libgdev.cuda`` through a gdevd mount; without ``--mount`` a gdevd is started on a temporary
directory and stopped at the end) it prints:
  * launch+sync: median/p99 of cuLaunchKernel + cuCtxSynchronize of a 1-thread kernel;
  * event record: median cost of cuEventRecord (a marker launch) + cuEventSynchronize;
  * LOOP timed by events vs by the host around cuCtxSynchronize (device time <= host time);
  * 64 MiB cuMemcpyHtoD / DtoH (pageable) and HtoD from cuMemAllocHost memory, in GB/s.
The table also replaces this script's section of docs/benchmarks.md (with ``--write-docs``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import trio

from scripts.bench import benchdoc
from scripts.bench.daemon import gdevd

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "kernels"
MiB = 1 << 20


@contextmanager
def inprocess() -> Iterator[Any]:
    from gdevd import gdev
    from libgdev.cuda import bind

    gdev.boot()
    try:
        yield bind(gdev)
    finally:
        gdev.shutdown()


@contextmanager
def in_daemon_kcuda() -> Iterator[Any]:
    import kcuda
    from gdevd.runtime import GdevSystem

    ready, box = threading.Event(), {}

    async def main() -> None:
        async with GdevSystem(None) as system:
            box["stop"] = trio.Event()
            box["system"], box["token"] = system, trio.lowlevel.current_trio_token()
            ready.set()
            await box["stop"].wait()

    t = threading.Thread(target=trio.run, args=(main,), daemon=True)
    t.start()
    ready.wait()
    kcuda.attach(box["system"], box["token"])
    try:
        yield kcuda.driver
    finally:
        kcuda.detach()
        trio.from_thread.run_sync(box["stop"].set, trio_token=box["token"])
        t.join()


@contextmanager
def mounted(mount: str | None, *gdevd_args: str) -> Iterator[Any]:
    """libgdev.cuda on ``mount``, or on a gdevd started (with ``gdevd_args``) on a temporary
    mount point and stopped at the end."""
    import libgdev
    from libgdev.cuda import bind

    with contextlib.ExitStack() as stack:
        if mount is None:
            mount = stack.enter_context(gdevd(*gdevd_args)).mount
        os.environ["GDEV_MOUNT"] = mount
        yield bind(libgdev)


def _timed(fn: Callable[[], None], n: int) -> np.ndarray:
    out = np.empty(n)
    for i in range(n):
        t0 = time.perf_counter()
        fn()
        out[i] = time.perf_counter() - t0
    return out * 1e6


def measure(drv: Any, repeat: int) -> dict[str, str]:
    drv.cuInit(0)
    ctx = drv.cuCtxCreate(0, 0)
    try:
        return _measure(drv, repeat)
    finally:
        drv.cuCtxDestroy(ctx)


def _measure(drv: Any, repeat: int) -> dict[str, str]:
    r: dict[str, str] = {}
    loop = drv.cuModuleGetFunction(drv.cuModuleLoad(KERNELS / "loop.ptx"), "loop")
    d = drv.cuMemAlloc(64 * MiB)

    def launch() -> None:
        drv.cuLaunchKernel(loop, 1, 1, 1, 1, 1, 1, 0, None, [d, 1, 1])
        drv.cuCtxSynchronize()
    launch()
    us = _timed(launch, repeat)
    r["launch+sync us (median/p99)"] = f"{np.median(us):.0f} / {np.percentile(us, 99):.0f}"
    ev0, ev1 = drv.cuEventCreate(), drv.cuEventCreate()

    def record() -> None:
        drv.cuEventRecord(ev0, None)
        drv.cuEventSynchronize(ev0)
    us = _timed(record, repeat)
    r["event record+sync us (median)"] = f"{np.median(us):.0f}"
    drv.cuEventRecord(ev0, None)
    t0 = time.perf_counter()
    drv.cuLaunchKernel(loop, 64, 1, 1, 64, 1, 1, 0, None, [d, 4096, 2000])
    drv.cuEventRecord(ev1, None)
    drv.cuCtxSynchronize()
    host_ms = (time.perf_counter() - t0) * 1e3
    r["LOOP ms: events / host"] = f"{drv.cuEventElapsedTime(ev0, ev1):.1f} / {host_ms:.1f}"
    host = np.random.default_rng(0).integers(0, 256, 64 * MiB, dtype=np.uint8)
    pinned = drv.cuMemAllocHost(64 * MiB)
    for name, fn in (("HtoD pageable", lambda: drv.cuMemcpyHtoD(d, host)),
                     ("DtoH pageable", lambda: drv.cuMemcpyDtoH(host, d)),
                     ("HtoD pinned", lambda: drv.cuMemcpyHtoD(d, pinned))):
        fn()
        s = np.median(_timed(fn, 5)) / 1e6
        r[f"64 MiB {name} GB/s"] = f"{64 * MiB / s / 1e9:.2f}"
    drv.cuMemFreeHost(pinned)
    return r


def events_within_host(table: dict[str, dict[str, str]]) -> str:
    """One line per binding: is the event-timed LOOP no longer than the host-timed one?"""
    out = []
    for name, r in table.items():
        ev, host = (float(x) for x in r["LOOP ms: events / host"].split(" / "))
        out.append(f"{name} {'yes' if ev <= host else '**no**'}")
    return ", ".join(out)


def main() -> None:
    run = benchdoc.Run()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mount", help="use this gdevd mount instead of starting one")
    ap.add_argument("--repeat", type=int, default=200)
    benchdoc.add_write_flag(ap)
    args = ap.parse_args()
    print("command:", run.command)
    table: dict[str, dict[str, str]] = {}
    for name, binding in (("in-process", inprocess), ("kcuda", in_daemon_kcuda),
                          ("libgdev.cuda", lambda: mounted(args.mount))):
        with binding() as drv:
            table[name] = measure(drv, args.repeat)
    rows = [[row, *(table[n][row] for n in table)] for row in next(iter(table.values()))]
    text = benchdoc.table(["", *table], rows)
    print(text, end="")
    if args.write_docs:
        body = ("The driver API through its three bindings (docs/cuda.md): in-process "
                "`gdevd.gdev`, `kcuda` over a runtime on its own trio thread, `libgdev.cuda` "
                f"through a gdevd mount. Medians of {args.repeat} calls (p99 where shown); "
                "copies the median of 5. No speed target is set for this layer; the check "
                "is that event timing is consistent: device (event) time <= host time for "
                f"LOOP: {events_within_host(table)}.\n\n" + text)
        benchdoc.write_section("cuda.py", "CUDA driver API bindings (scripts/bench/cuda.py)",
                               body, run)


if __name__ == "__main__":
    main()
