"""The protocol boundary's costs, compared across source trees in one run.

    python scripts/bench/protocol.py                      # this tree alone
    python scripts/bench/protocol.py --base /tmp/main     # a checkout of main, then this one

For each tree (its gdevd and its libgdev, by PYTHONPATH), in alternating rounds: the median
latency of a small call (gquery), of 256-byte inline copies each way, and of an AES kernel
launch plus sync through the CUDA layer (``aes256_expand_keys`` on one thread with no keys:
the launch path's own cost, the kernel does no work).  Prints medians per tree and each
figure's ratio to the base.  Writes nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from scripts.bench.daemon import gdevd

ROOT = Path(__file__).resolve().parents[2]

CLIENT = r"""
import json, os, sys, time
import numpy as np
import libgdev
from libgdev import cuda

def median_us(fn, n):
    for _ in range(min(n, 50)):
        fn()
    ts = []
    for _ in range(n):
        t = time.perf_counter(); fn(); ts.append(time.perf_counter() - t)
    ts.sort()
    return ts[len(ts) // 2] * 1e6

N = int(sys.argv[1])
out = {}
with libgdev.gopen(0) as h:
    out["gquery"] = median_us(lambda: h.gquery(libgdev.GDEV_QUERY_DEVICE_MEM_SIZE), N)
    buf = np.arange(256, dtype=np.uint8)
    back = np.empty_like(buf)
    addr = h.gmalloc(256)
    out["htod_256"] = median_us(lambda: h.gmemcpy_to_device(addr, buf), N)
    out["dtoh_256"] = median_us(lambda: h.gmemcpy_from_device(back, addr), N)
cuda.cuInit(0)
ctx = cuda.cuCtxCreate(0, cuda.cuDeviceGet(0))
mod = cuda.cuModuleLoad(os.path.join(sys.argv[2], "kernels", "aes.ptx"))
f = cuda.cuModuleGetFunction(mod, "aes256_expand_keys")
d = cuda.cuMemAlloc(4096)
def launch():
    cuda.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, None, [d, d, d, 0])
    cuda.cuCtxSynchronize()
out["aes_launch"] = median_us(launch, max(N // 20, 50))
cuda.cuCtxDestroy(ctx)
print(json.dumps(out))
"""


def one_round(tree: Path, calls: int) -> dict[str, float]:
    """Start ``tree``'s gdevd, run the client of ``tree`` against it, stop the daemon."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    with gdevd("--memory", "1G", "--vgpus", "1", env=env) as daemon:
        r = subprocess.run([sys.executable, "-c", CLIENT, str(calls), str(tree)],
                           env={**env, "GDEV_MOUNT": daemon.mount},
                           cwd=os.path.dirname(daemon.mount), capture_output=True, text=True,
                           timeout=600)
    if r.returncode:
        raise SystemExit(f"client of {tree} failed:\n{r.stderr}")
    return dict(json.loads(r.stdout))


def main() -> None:
    """Alternate rounds over the trees; print medians and ratios to the first tree."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=Path, help="source tree to compare against (first)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds per tree (default 3)")
    ap.add_argument("--calls", type=int, default=3000, help="calls per small-call figure")
    args = ap.parse_args()
    trees = [args.base, ROOT] if args.base else [ROOT]
    runs: dict[Path, list[dict[str, float]]] = {t: [] for t in trees}
    for _ in range(args.rounds):
        for t in trees:
            runs[t].append(one_round(t, args.calls))
    keys = list(runs[trees[0]][0])
    med = {t: {k: statistics.median(r[k] for r in runs[t]) for k in keys} for t in trees}
    print(f"{'figure (median us)':22}" + "".join(f"{str(t)[-24:]:>26}" for t in trees)
          + ("   ratio" if len(trees) > 1 else ""))
    for k in keys:
        row = f"{k:22}" + "".join(f"{med[t][k]:26.1f}" for t in trees)
        if len(trees) > 1:
            row += f"   {med[trees[1]][k] / med[trees[0]][k]:5.2f}x"
        print(row)


if __name__ == "__main__":
    main()
