"""ecryptfs throughput (the paper's Figs. 8-10) on the emulated GPU.

    python scripts/bench/ecryptfs.py [--max-size 16M] [--repeat N] [--write-docs] [--plots DIR]

Runs a gdevd in this process (its mount on a temporary directory) and drives the module's
file layer (``EncryptedFile``, what every FUSE read/write of the plaintext view calls) with
one request of each size from 4 KiB to ``--max-size`` on four cipher paths:

* ``cpu``: ``cryptography`` (OpenSSL AES-NI) in the daemon;
* ``cpu (software AES)``: the same code in a child process whose OpenSSL is told the CPU has
  no AES-NI, PCLMULQDQ or SSSE3 (``OPENSSL_ia32cap``), so it runs its portable C T-table AES:
  the CPU of the paper's Figs. 8-9 (a Core 2 QX9650, before AES-NI; Linux's aes-generic);
* ``gpu (kcuda)``: kernels/aes.ptx on the emulated GPU through kcuda, in the daemon (Gdev);
* ``gpu (helper)``: the same kernels in a user-space helper process over libgdev (KGPU).

Fig. 10: write throughput of the kcuda path while user-space processes keep the GPU busy
with LOOP launches (libgdev.cuda, default priority 20), with the module's context at the
same priority ("no priorities") and at 40 ("priorities"), and with no competitor at all.
``--write-docs`` rewrites this script's section of docs/benchmarks.md; ``--plots DIR`` writes PNGs
(needs the ``bench`` extra: matplotlib).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kcuda
from gdevd.modules.ecryptfs.cipher import CipherPaths, CpuCipher, GpuCipher
from gdevd.modules.ecryptfs.extent import EXTENT, RECORD, open_records, record_offset
from gdevd.modules.ecryptfs.files import EncryptedFile
from gdevd.modules.ecryptfs.helper import HelperCipher
from gdevd.modules.ecryptfs.keys import MountKey
from scripts.bench import benchdoc, inproc

ROOT = Path(__file__).resolve().parents[2]

KiB, MiB = 1 << 10, 1 << 20
BREAKDOWN = MiB     # the request size whose read time is broken down
# OPENSSL_ia32cap mask: clear AES-NI (bit 57), PCLMULQDQ (33) and SSSE3 (41, OpenSSL's vpaes)
SOFTWARE_AES = "~0x200020200000000"
COMPETITOR = """
import sys, numpy as np
from libgdev import cuda
cuda.cuInit(0)
ctx = cuda.cuCtxCreate(0, 0)
f = cuda.cuModuleGetFunction(cuda.cuModuleLoad(sys.argv[1]), "loop")
d = cuda.cuMemAlloc(4 * 1024)
print("ready", flush=True)
while True:
    cuda.cuLaunchKernel(f, 8, 1, 1, 128, 1, 1, 0, None, [d, 1024, int(sys.argv[2])])
    cuda.cuCtxSynchronize()
"""


TITLE = "ecryptfs: the OS uses the GPU (scripts/bench/ecryptfs.py; Figs. 8-10)"
READING = """\
Reading. The emulated GPU runs the AES-XTS kernel compiled to C (the compiled PTX engine) on
this machine's two cores: about 130 MB/s per engine thread, 260 MB/s on both (compute.py
--engines). Against the CPU of the paper's Figs. 8-9 (a Core 2 without AES-NI, whose kernel
ran software AES: the "cpu (software AES)" curve, OpenSSL's portable C in a child process told
the CPU has no AES-NI) the GPU path wins from 256-512 KiB up, as in the paper. Against this CPU's
AES-NI (the "cpu" curve: OpenSSL at GB/s, bounded by Python per-extent work and HMAC-SHA256)
it does not, and cannot on this machine: in the breakdown of a 1 MiB read, the GPU path's
time without its kernel's (the tag check both paths do, the copies, the launch's hand-offs
between threads) is already the CPU path's whole read or more, so even a free kernel would
not pass it; and the kernel would have to outrun AES-NI on the two cores it shares with
the rest of the request. A GPU request has a fixed cost (launch, copies, the relay into the
trio loop), so throughput grows with the request size until the kernel's work dominates;
this is why small requests take the CPU (`cpu_threshold`). The helper path (KGPU's upcall)
pays, per request, two pipe copies of the data, two process switches and libgdev's socket
round trips instead of direct calls into the runtime. In Fig. 10 the LOOP processes,
sharing the engine, cut the module's write throughput well below "alone"; waiters of a vGPU
are served by priority, so at 40 the module's context waits for the running LOOP only, not
for the queued ones (the paper's Fig. 10 effect; one competitor alone would show none).
With the load average well above the two cores, run-to-run noise can be as large as the
effect.
"""

def parse_size(text: str) -> int:
    """``4K``, ``16M`` or a number of bytes."""
    m = re.fullmatch(r"(\d+)([KkMm]?)", text)
    if not m:
        raise argparse.ArgumentTypeError(f"bad size {text!r}")
    return int(m.group(1)) * {"": 1, "k": KiB, "m": MiB}[m.group(2).lower()]


def sizes(limit: int) -> list[int]:
    """4 KiB, 8 KiB, ... up to ``limit``."""
    out, s = [], 4 * KiB
    while s <= limit:
        out.append(s)
        s *= 2
    return out


def throughput(f: EncryptedFile, size: int, repeat: int, op: str) -> float:
    """Median MB/s of ``repeat`` writes (or reads) of ``size`` bytes at offset 0."""
    data = os.urandom(size)
    f.write(0, data)  # the file exists at this size; the first GPU call is warm
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        if op == "write":
            f.write(0, data)
        else:
            assert len(f.read(0, size)) == size
        times.append(time.perf_counter() - t)
    return size / statistics.median(times) / 1e6


def sweep(name: str, cipher: Any, workdir: str, limit: int, repeat: int) -> dict[str, list]:
    """Figs. 8-9 for one path: {"read": [MB/s per size], "write": [...]}."""
    mk = MountKey(os.urandom(32))
    out: dict[str, list] = {"read": [], "write": []}
    for size in sizes(limit):
        path = os.path.join(workdir, f"{name.split()[0]}-{size}")
        f = EncryptedFile.create(path, 0o600, mk, CipherPaths(cipher, 0))
        try:
            reps = repeat if size <= MiB else 1
            for op in ("write", "read"):
                out[op].append(throughput(f, size, reps, op))
        finally:
            f.close()
            os.unlink(path)
        print(f"  {name:14s} {size // KiB:6d} KiB  write {out['write'][-1]:9.3f} MB/s  "
              f"read {out['read'][-1]:9.3f} MB/s", flush=True)
    return out


def _best_ms(fn: Callable[[], Any], repeat: int) -> float:
    """Best wall milliseconds of ``repeat`` calls of ``fn``."""
    out = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t)
    return out * 1e3


def _cipher_ms(cipher: Any, key: bytes, ct: bytes, repeat: int) -> tuple[float, float | None]:
    """(best ms of ``repeat`` decryptions of ``ct``, best ms the compute engine spent in one
    of them: None unless ``cipher`` runs on this process's emulated GPU)."""
    gpu = getattr(getattr(cipher, "handle", None), "phys", None)
    best, kernel = float("inf"), float("inf")
    for _ in range(repeat):
        busy0, t = gpu.compute.busy_s if gpu else 0.0, time.perf_counter()
        cipher.decrypt(key, 0, ct)
        best = min(best, time.perf_counter() - t)
        if gpu:
            kernel = min(kernel, gpu.compute.busy_s - busy0)
    return best * 1e3, kernel * 1e3 if gpu else None


def breakdown(cipher: Any, workdir: str, size: int, repeat: int) -> dict[str, float]:
    """Where one read of ``size`` bytes goes on ``cipher``'s path, in ms (each part the
    best of ``repeat``): the whole read; its tag check (HMAC-SHA256 of every extent, on the
    CPU whatever the cipher) and its cipher call; on a GPU path, the compute engine's time
    in that call (the kernel's quanta: the rest is copies, the launch's hand-offs and the
    wait for its completion)."""
    mk = MountKey(os.urandom(32))
    f = EncryptedFile.create(os.path.join(workdir, "breakdown"), 0o600, mk,
                             CipherPaths(cipher, 0))
    try:
        data = os.urandom(size)
        f.write(0, data)
        n = size // EXTENT
        records = os.pread(f.fd, n * RECORD, record_offset(0))
        ct = open_records(f.header, 0, records, n)
        key = f.header.key.xts
        out = {"read": _best_ms(lambda: f.read(0, size), repeat),
               "tag check": _best_ms(lambda: open_records(f.header, 0, records, n), repeat)}
        out["cipher"], kernel = _cipher_ms(cipher, key, ct, repeat)
        if kernel is not None:
            out["of which the kernel"] = kernel
        return out
    finally:
        f.close()
        os.unlink(os.path.join(workdir, "breakdown"))


def wait_compiled(mount: str, timeout: float = 300.0) -> None:
    """Wait until no PTX module of the daemon is still compiling (MOUNT/proc/gdev/
    ptx_modules): the tiered engine runs a module on the interpreter until then, and the
    figures are of the steady state."""
    path, t0, said = os.path.join(mount, "proc", "gdev", "ptx_modules"), time.monotonic(), False
    while True:
        with open(path) as f:
            rows = [ln.split() for ln in f.read().splitlines()[1:] if ln.strip()]
        if not any(r[2] == "compiling" for r in rows):
            return
        if time.monotonic() - t0 > timeout:
            raise RuntimeError(f"PTX modules still compiling after {timeout:.0f} s: {rows}")
        if not said:
            print("  waiting for the AES kernels to compile (tiered engine)", flush=True)
            said = True
        time.sleep(0.2)


def software_sweep(workdir: str, limit: int, repeat: int) -> dict[str, list]:
    """The ``cpu`` sweep in a child process whose OpenSSL runs without AES-NI (see the module
    docstring); its progress lines pass through."""
    out = os.path.join(workdir, "software.json")
    env = {**os.environ, "OPENSSL_ia32cap": SOFTWARE_AES, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "scripts.bench.ecryptfs", "--software-child", out,
                    "--max-size", str(limit), "--repeat", str(repeat)], env=env, check=True)
    with open(out) as f:
        return json.load(f)


def contention(mount: str, workdir: str, size: int, repeat: int, loop_n: int,
               competitors: int) -> dict[str, float]:
    """Fig. 10: kcuda write MB/s alone, and beside ``competitors`` LOOP processes on the same
    vGPU without and with priorities (a waiter is served by priority: with one competitor
    there is never a queue to jump, so several keep it full)."""
    gpu = GpuCipher(kcuda, 0)
    wait_compiled(mount)
    mk = MountKey(os.urandom(32))
    f = EncryptedFile.create(os.path.join(workdir, "fig10"), 0o600, mk, CipherPaths(gpu, 0))
    results: dict[str, float] = {}
    try:
        gpu.set_priority(40)
        results["alone"] = throughput(f, size, repeat, "write")
        env = {**os.environ, "GDEV_MOUNT": mount, "PYTHONPATH": str(ROOT)}
        comps = [subprocess.Popen([sys.executable, "-c", COMPETITOR,
                                   str(ROOT / "kernels/loop.ptx"), str(loop_n)],
                                  env=env, stdout=subprocess.PIPE, text=True)
                 for _ in range(competitors)]
        try:
            for comp in comps:
                assert comp.stdout is not None and comp.stdout.readline().strip() == "ready"
            for label, prio in (("no priorities (20 vs 20)", 20), ("priorities (40 vs 20)", 40)):
                gpu.set_priority(prio)
                gpu.apply_priority()
                results[label] = throughput(f, size, repeat, "write")
        finally:
            for comp in comps:
                comp.kill()
                comp.wait()
    finally:
        f.close()
        gpu.close()
    return results


def run_all(args: argparse.Namespace, mount: str) -> str:
    """Every measurement; returns the markdown section."""
    workdir = tempfile.mkdtemp(prefix="ecfs-bench-")
    paths: dict[str, Callable[[], Any]] = {
        "cpu": CpuCipher, "gpu (kcuda)": lambda: GpuCipher(kcuda, 0),
        "gpu (helper)": lambda: HelperCipher(mount, 0)}
    curves, parts = {}, {}
    for name, make in paths.items():
        cipher = make()
        wait_compiled(mount)
        try:
            curves[name] = sweep(name, cipher, workdir, args.max_size, args.repeat)
            if name != "gpu (helper)":    # (its cipher runs in another process)
                parts[name] = breakdown(cipher, workdir, BREAKDOWN, 2 * args.repeat + 1)
                print(f"  {name:14s} 1 MiB read: " + ", ".join(
                    f"{k} {v:.2f} ms" for k, v in parts[name].items()), flush=True)
        finally:
            cipher.close()
        if name == "cpu":
            curves["cpu (software AES)"] = software_sweep(workdir, args.max_size, args.repeat)
    fig10 = contention(mount, workdir, args.fig10_size, args.repeat, args.loop_n,
                       args.competitors)
    print("  fig10", fig10, flush=True)
    if args.plots:
        plot(curves, fig10, args)
    return markdown(curves, parts, fig10, args)


def markdown(curves: dict, parts: dict, fig10: dict, args: argparse.Namespace) -> str:
    """The docs/benchmarks.md section."""
    lines = ["One request of each size on the module's file layer "
             "(4 KiB extents, AES-256-XTS + HMAC-SHA256 per extent), median of "
             f"{args.repeat} (1 above 1 MiB). MB/s = 10^6 bytes/s.", ""]
    for op, fig in (("read", 8), ("write", 9)):
        lines += [f"### Fig. {fig}: {op} throughput (MB/s)", "",
                  "| request | " + " | ".join(curves) + " |",
                  "|---:|" + "---:|" * len(curves)]
        for i, size in enumerate(sizes(args.max_size)):
            row = " | ".join(f"{curves[n][op][i]:.3f}" for n in curves)
            lines.append(f"| {size // KiB} KiB | {row} |")
        lines += ["", f"![Fig. {fig}](img/ecryptfs-{op}.png)", ""]
    lines += [f"### Where a {BREAKDOWN // MiB} MiB read goes (ms, each part the best of "
              f"{2 * args.repeat + 1})", "",
              "| path | " + " | ".join(parts["cpu"]) + " | of which the kernel |",
              "|---|" + "---:|" * (len(parts["cpu"]) + 1)]
    for name, row in parts.items():
        cells = [f"{row[k]:.2f}" for k in parts["cpu"]]
        kernel = row.get("of which the kernel")
        cells.append("" if kernel is None else f"{kernel:.2f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [""]
    lines += [f"### Fig. 10: kcuda write throughput of {args.fig10_size // KiB} KiB requests "
              f"beside {args.competitors} LOOP processes (n={args.loop_n}) on the same vGPU "
              "(MB/s)", "",
              "| setting | MB/s |", "|---|---:|"]
    lines += [f"| {k} | {v:.3f} |" for k, v in fig10.items()]
    lines += ["", "![Fig. 10](img/ecryptfs-contention.png)", "", READING]
    return "\n".join(lines)


def plot(curves: dict, fig10: dict, args: argparse.Namespace) -> None:
    """PNG plots (matplotlib: ``pip install -e '.[bench]'``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [s // KiB for s in sizes(args.max_size)]
    for op, fig in (("read", 8), ("write", 9)):
        fg, ax = plt.subplots(figsize=(6, 4))
        for name, c in curves.items():
            ax.plot(xs, c[op], marker="o", label=name)
        ax.set(xscale="log", yscale="log", xlabel="request size (KiB)", ylabel="MB/s",
               title=f"Fig. {fig}: ecryptfs {op} throughput (emulated GPU)")
        ax.legend()
        fg.tight_layout()
        fg.savefig(os.path.join(args.plots, f"ecryptfs-{op}.png"), dpi=90)
    fg, ax = plt.subplots(figsize=(6, 4))
    ax.bar(range(len(fig10)), list(fig10.values()))
    ax.set_xticks(range(len(fig10)), [k.split(" (")[0] for k in fig10])
    ax.set(ylabel="MB/s", title="Fig. 10: kcuda write beside a LOOP process")
    fg.tight_layout()
    fg.savefig(os.path.join(args.plots, "ecryptfs-contention.png"), dpi=90)


def main() -> None:
    """Start the daemon here, run the benchmarks from a thread, stop the daemon."""
    run = benchdoc.Run()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--max-size", type=parse_size, default=16 * MiB)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--fig10-size", type=parse_size, default=256 * KiB)
    p.add_argument("--loop-n", type=int, default=20000, help="LOOP kernel's n (competitor)")
    p.add_argument("--competitors", type=int, default=3, help="LOOP processes in Fig. 10")
    benchdoc.add_write_flag(p)
    p.add_argument("--plots", help="write PNG plots into this directory")
    p.add_argument("--software-child", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.software_child:
        with tempfile.TemporaryDirectory(prefix="ecfs-bench-") as workdir, \
                open(args.software_child, "w") as f:
            json.dump(sweep("cpu (software AES)", CpuCipher(), workdir, args.max_size,
                            args.repeat), f)
        return
    section = inproc.with_daemon(lambda mount: run_all(args, mount), "ecfs-bench-mnt-")
    print(section)
    if args.write_docs:
        benchdoc.write_section("ecryptfs.py", TITLE, section, run)


if __name__ == "__main__":
    main()
