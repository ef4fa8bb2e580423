"""CUDA IPC's costs, in one run: ``python scripts/bench/ipc.py``.

Starts its own gdevd on a temporary mount and prints, per call through the daemon and as a
ratio to a small call (gquery) measured in the same run: exporting an allocation
(gipc_export), opening and closing it in another context (gipc_open + gipc_close, which map
and unmap its pages) next to allocating and freeing as much (gmalloc + gfree), and an
interprocess event recorded in one context and synchronized in another next to two stream
syncs.  No targets: the numbers show what the IPC verbs cost next to their neighbours.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import libgdev
from libgdev.constants import GDEV_QUERY_DEVICE_MEM_SIZE
from scripts.bench.daemon import gdevd


def per_call_us(fn: Callable[[], object], n: int) -> float:
    """Mean microseconds of ``fn()`` over ``n`` calls (after one warm-up call)."""
    fn()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n * 1e6


def measure(mount: str, size: int, n: int) -> list[tuple[str, float]]:
    """(what, microseconds per call) rows; the first is the gquery baseline."""
    with libgdev.gopen(0, mount) as a, libgdev.gopen(1, mount) as b:
        va = a.gmalloc(size)
        handle = a.gipc_export(va)
        ev = a.gipc_event_new()
        mine, theirs = int.from_bytes(ev[8:12], "little"), b.gipc_event_open(ev)

        def open_close() -> None:
            b.gipc_close(b.gipc_open(handle)[0])

        def record_sync() -> None:
            a.gipc_event_record(mine)
            b.gipc_event_sync(theirs)

        def two_syncs() -> None:
            a.gstream_sync(0)
            b.gstream_sync(0)
        def query() -> float:
            return per_call_us(lambda: a.gquery(GDEV_QUERY_DEVICE_MEM_SIZE), n)
        first = query()
        rows = [("gipc_export", per_call_us(lambda: a.gipc_export(va), n)),
                (f"gipc_open + gipc_close, {size >> 10} KiB", per_call_us(open_close, n)),
                (f"gmalloc + gfree, {size >> 10} KiB",
                 per_call_us(lambda: a.gfree(a.gmalloc(size)), n)),
                ("event record + sync in another context", per_call_us(record_sync, n)),
                ("two gstream_sync", per_call_us(two_syncs, n))]
        return [("gquery (best of before and after)", min(first, query())), *rows]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1 << 20, help="allocation bytes")
    ap.add_argument("-n", type=int, default=200, help="calls per measurement")
    args = ap.parse_args()
    with gdevd("--memory", "1G") as d:
        rows = measure(d.mount, args.size, args.n)
    base = rows[0][1]
    for what, us in rows:
        print(f"{what:45s} {us:9.0f} us  {us / base:6.2f}x gquery")


if __name__ == "__main__":
    main()
