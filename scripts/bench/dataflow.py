"""Fig. 11 of the Gdev paper: data-flow MADD over a tree and a rectangle of contexts.

Every node is its own context (``gopen``) computing ``c = a + b`` on n x n uint32 matrices
with the MADD kernel (kernels/madd.ptx).  Leaves add two host matrices; an inner node adds
the outputs of its two parents.

* ``modular``: each node copies its output to the host and the next node copies it back in
  (the only way without shared device memory);
* ``shm``: each node's output is a shared device segment (``gshmget`` with the node's key),
  which the next nodes attach (``gshmat``): no host round trip.

Shapes: ``tree`` is 6 levels over 32 leaves (32+16+8+4+2+1 = 63 nodes); ``rect`` is 6
stages of 10 nodes, node (s, r) adding the outputs of (s-1, r) and (s-1, r+1 mod 10).
Nodes of one level run concurrently.  The result of every sink is checked against numpy.
Run in-process on the runtime (no daemon): ``python scripts/bench/dataflow.py [--n 256,512]``.
The table replaces the ``dataflow.py`` section of docs/benchmarks.md (inside the hand-written
"memory" section; only with ``--write-docs``).
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

Node = tuple[int, int]                       # (level, index)


def shape(name: str) -> list[list[tuple[Node, Node] | None]]:
    """Per level, per node: its two parents (None for a level-0 node)."""
    if name == "tree":
        levels: list[list[tuple[Node, Node] | None]] = [[None] * 32]
        for lv in range(1, 6):
            levels.append([((lv - 1, 2 * i), (lv - 1, 2 * i + 1)) for i in range(32 >> lv)])
        return levels
    levels = [[None] * 10]
    for s in range(1, 6):
        levels.append([((s - 1, r), (s - 1, (r + 1) % 10)) for r in range(10)])
    return levels


class Flow:
    """One run: contexts, device buffers, host copies and the expected values."""

    def __init__(self, system: rt.GdevSystem, n: int, mode: str) -> None:
        self.s, self.n, self.mode = system, n, mode
        self.bytes = 4 * n * n
        self.handles: dict[Node, rt.Handle] = {}
        self.out: dict[Node, int] = {}        # device address of each node's output
        self.host: dict[Node, np.ndarray] = {}
        self.want: dict[Node, np.ndarray] = {}

    def key(self, node: Node) -> int:
        return 0x6D00_0000 + node[0] * 1000 + node[1]

    async def run_node(self, node: Node, parents: tuple[Node, Node] | None, rng_seed: int) -> None:
        h = await rt.gopen(self.s, (node[0] * 7 + node[1]) % len(self.s.virtual))
        self.handles[node] = h
        code = await rt.gmalloc(h, len(PTX))
        await rt.gmemcpy_to_device(h, code, PTX, len(PTX))
        ins = await self.inputs(h, node, parents, rng_seed)
        if self.mode == "shm":
            sid = await rt.gshmget(h, self.key(node), self.bytes, rt.GDEV_IPC_CREAT | 0o600)
            out = await rt.gshmat(h, sid)
        else:
            out = await rt.gmalloc(h, self.bytes)
        n = self.n
        k = rt.GdevKernel(code, len(PTX), "add", grid=(-(-n // 16), -(-n // 16), 1),
                          block=(16, 16, 1), params=struct.pack("<QQQI4x", *ins, out, n))
        await rt.gsync(h, await rt.glaunch(h, k))
        self.out[node] = out
        if self.mode == "modular":
            host = np.empty(n * n, np.uint32)
            await rt.gmemcpy_from_device(h, host, out, self.bytes)
            self.host[node] = host

    async def inputs(self, h: rt.Handle, node: Node, parents: tuple[Node, Node] | None,
                     seed: int) -> list[int]:
        if parents is None:
            rng = np.random.default_rng(seed)
            mats = [rng.integers(0, 1 << 20, self.n * self.n, dtype=np.uint32) for _ in "ab"]
            self.want[node] = mats[0] + mats[1]
            vas = [await rt.gmalloc(h, self.bytes) for _ in mats]
            for va, m in zip(vas, mats, strict=True):
                await rt.gmemcpy_to_device(h, va, m, self.bytes)
            return vas
        self.want[node] = self.want[parents[0]] + self.want[parents[1]]
        if self.mode == "shm":
            return [await rt.gshmat(h, await rt.gshmget(h, self.key(p), 0, 0o600))
                    for p in parents]
        vas = [await rt.gmalloc(h, self.bytes) for _ in parents]
        for va, p in zip(vas, parents, strict=True):
            await rt.gmemcpy_to_device(h, va, self.host[p], self.bytes)
        return vas

    async def check(self, node: Node) -> None:
        got = np.empty(self.n * self.n, np.uint32)
        await rt.gmemcpy_from_device(self.handles[node], got, self.out[node], self.bytes)
        if not np.array_equal(got, self.want[node]):
            raise AssertionError(f"{self.mode}: node {node} computed a wrong matrix")


async def makespan(config: rt.GdevConfig, name: str, mode: str, n: int) -> float:
    """Seconds from the first gopen to the last sink's result, all nodes checked."""
    async with rt.GdevSystem(config) as system:
        flow = Flow(system, n, mode)
        levels = shape(name)
        t0 = time.perf_counter()
        for lv, nodes in enumerate(levels):
            async with trio.open_nursery() as nursery:
                for i, parents in enumerate(nodes):
                    nursery.start_soon(flow.run_node, (lv, i), parents, lv * 100 + i)
        elapsed = time.perf_counter() - t0
        for i in range(len(levels[-1])):
            await flow.check((len(levels) - 1, i))
        for h in list(flow.handles.values()):
            await rt.gclose(h)
        system.check_invariants()
    return elapsed


def main() -> None:
    """Print both makespans and the speedup for each matrix side and shape."""
    run = benchdoc.Run()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", default="256", help="matrix side(s), comma-separated (paper: 1024)")
    p.add_argument("--repeat", type=int, default=1, help="runs per cell (best is kept)")
    benchdoc.add_write_flag(p)
    args = p.parse_args()
    config = rt.GdevConfig(memory=1 << 30, contexts_max=128)
    rows = []
    for n in (int(x) for x in args.n.split(",")):
        print(f"MADD data flow, {n}x{n} uint32 ({4 * n * n >> 10} KiB per matrix), "
              "in-process runtime")
        print(f"{'shape':6} {'nodes':>5} {'modular s':>10} {'shm s':>8} {'speedup':>8}")
        for name in ("tree", "rect"):
            nodes = sum(len(level) for level in shape(name))
            best = {m: min([trio.run(makespan, config, name, m, n)
                            for _ in range(args.repeat)]) for m in ("modular", "shm")}
            gain = best["modular"] / best["shm"] - 1
            print(f"{name:6} {nodes:5d} {best['modular']:10.3f} {best['shm']:8.3f} "
                  f"{gain:+8.1%}")
            rows.append([n, name, f"{best['modular']:.3f}", f"{best['shm']:.3f}",
                         f"{100 * gain:+.1f} %"])
    if args.write_docs:
        benchdoc.write_section("dataflow.py", "", benchdoc.table(
            ["n", "shape", "modular s", "shm s", "speedup"], rows), run)


if __name__ == "__main__":
    main()
