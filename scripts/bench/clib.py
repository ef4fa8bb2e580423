"""The C client libraries against the Python client, on one gdevd, as ratios within one run.

    python scripts/bench/clib.py [--mount MNT] [--calls N] [--mib M] [--reps R] [--rounds K]
                                 [--write-docs]

Without ``--mount`` a gdevd is started on a temporary directory and stopped at the end.
Prints, each through libcuda.so.1 (a C program, scripts/bench/clib/drv_bench.c) and through
the Python client (``libgdev.cuda``), in the same run:
  * small-call latency: cuMemcpyHtoD of 4 bytes, median and p99 in us (target: C at most
    1.2x Python);
  * pageable cuMemcpyHtoD of ``--mib`` MiB (default 256), median and best GB/s (target: C at
    least 0.9x Python);
  * empty-kernel launch + synchronize through libcudart.so.13 (an nvcc -cudart shared
    program, scripts/bench/clib/rt_empty.cu), beside the Python client's launch + sync.
Each figure is the median over ``--rounds`` rounds that alternate C and Python.
Prints only; ``--write-docs`` also replaces this script's section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from scripts.bench import benchdoc
from scripts.bench.cuda import mounted

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent / "clib"
LIBS = ROOT / "build" / "clib"
OUT = ROOT / "build" / "clib-bench"
CUDA_HOME = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda"))
MiB = 1 << 20


def build() -> tuple[Path, Path | None]:
    """The driver-API bench (gcc) and, where nvcc exists, the runtime-API one."""
    subprocess.run(["make", "-s", "clib"], cwd=ROOT, check=True)
    OUT.mkdir(parents=True, exist_ok=True)
    drv = OUT / "drv_bench"
    subprocess.run(["gcc", "-std=c11", "-O2", f"-I{CUDA_HOME / 'include'}",
                    str(HERE / "drv_bench.c"), "-o", str(drv), f"-L{LIBS}", "-lcuda",
                    f"-Wl,-rpath,{LIBS}"], check=True)
    nvcc = shutil.which("nvcc") or str(CUDA_HOME / "bin" / "nvcc")
    if not os.access(nvcc, os.X_OK):
        return drv, None
    rt = OUT / "rt_empty"
    subprocess.run([nvcc, "-cudart", "shared", "-gencode", "arch=compute_75,code=compute_75",
                    "-o", str(rt), str(HERE / "rt_empty.cu")], check=True)
    return drv, rt


def run_c(exe: Path, *args: str) -> tuple[float, float]:
    env = {**os.environ, "LD_LIBRARY_PATH": str(LIBS)}
    out = subprocess.run([str(exe), *args], env=env, capture_output=True, text=True, check=True)
    a, b = out.stdout.split()
    return float(a), float(b)


def python_client(drv, calls: int, mib: int, reps: int) -> dict[str, tuple[float, float]]:
    """The same three measurements through libgdev.cuda."""
    drv.cuInit(0)
    ctx = drv.cuCtxCreate(0, 0)
    try:
        word = np.ones(1, dtype=np.uint32)
        d = drv.cuMemAlloc(4096)
        drv.cuMemcpyHtoD(d, word)
        t = np.empty(calls)
        for i in range(calls):
            t0 = time.perf_counter()
            drv.cuMemcpyHtoD(d, word)
            t[i] = (time.perf_counter() - t0) * 1e6
        out = {"small": (float(np.median(t)), float(np.percentile(t, 99)))}
        host = np.full(mib * MiB, 7, dtype=np.uint8)
        big = drv.cuMemAlloc(mib * MiB)
        g = []
        for _ in range(reps):
            t0 = time.perf_counter()
            drv.cuMemcpyHtoD(big, host)
            g.append(host.nbytes / (time.perf_counter() - t0) / 1e9)
        out["htod"] = (float(np.median(g)), float(max(g)))
        drv.cuMemFree(big)
        loop = drv.cuModuleGetFunction(drv.cuModuleLoad(ROOT / "kernels" / "loop.ptx"), "idle")
        t = np.empty(max(calls // 10, 20))
        for i in range(len(t)):
            t0 = time.perf_counter()
            drv.cuLaunchKernel(loop, 1, 1, 1, 1, 1, 1, 0, None, [d, 0])
            drv.cuCtxSynchronize()
            t[i] = (time.perf_counter() - t0) * 1e6
        out["launch"] = (float(np.median(t)), float(np.percentile(t, 99)))
        return out
    finally:
        drv.cuCtxDestroy(ctx)


def _median(pairs: list[tuple[float, float]]) -> tuple[float, float]:
    """Per column, the median over rounds."""
    return float(np.median([p[0] for p in pairs])), float(np.median([p[1] for p in pairs]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mount")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    benchdoc.add_write_flag(ap)
    args = ap.parse_args()
    run = benchdoc.Run()
    drv_exe, rt_exe = build()
    # one 1 GiB vGPU: room for a 256 MiB copy target beside the Python client's
    with mounted(args.mount, "--memory", "1G", "--vgpus", "1") as drv:
        # rounds interleave C and Python so that the shared machine's load hits both alike
        pys, cs, cl, rts = [], [], [], []
        for _ in range(args.rounds):
            pys.append(python_client(drv, args.calls, args.mib, args.reps))
            cs.append(run_c(drv_exe, "small", str(args.calls)))
            cl.append(run_c(drv_exe, "htod", str(args.mib), str(args.reps)))
            if rt_exe:
                rts.append(run_c(rt_exe, str(max(args.calls // 10, 20))))
    py = {k: _median([p[k] for p in pys]) for k in pys[0]}
    c_small, c_htod = _median(cs), _median(cl)
    rt = _median(rts) if rts else None
    rows = [
        "| | C (libcuda.so.1 / libcudart.so.13) | Python (libgdev.cuda) | C / Python |",
        "|---|---|---|---|",
        f"| 4-byte cuMemcpyHtoD, us (median / p99) | {c_small[0]:.0f} / {c_small[1]:.0f} "
        f"| {py['small'][0]:.0f} / {py['small'][1]:.0f} | {c_small[0] / py['small'][0]:.2f} |",
        f"| {args.mib} MiB pageable cuMemcpyHtoD, GB/s (median / best) | {c_htod[0]:.2f} / "
        f"{c_htod[1]:.2f} | {py['htod'][0]:.2f} / {py['htod'][1]:.2f} "
        f"| {c_htod[0] / py['htod'][0]:.2f} |",
    ]
    if rt is not None:
        rows.append(f"| empty kernel launch + sync, us (median / p99; C: libcudart <<<>>>) "
                    f"| {rt[0]:.0f} / {rt[1]:.0f} | {py['launch'][0]:.0f} / "
                    f"{py['launch'][1]:.0f} | {rt[0] / py['launch'][0]:.2f} |")
    body = "\n".join(rows) + "\n"
    print(body)
    if args.write_docs:
        benchdoc.write_section("clib.py", "C client libraries (scripts/bench/clib.py)", body, run)


if __name__ == "__main__":
    sys.exit(main())
