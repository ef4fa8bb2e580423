"""The repository's kernels (kernels/*.ptx) on the PTX engine: time per launch at benchmark sizes.

Prints one JSON object per line: the kernel, its size, process-CPU seconds of the best of
``--repeat`` launches (CPU time, as scripts/bench/compute.py argues: the executor is one
thread on a shared machine), thread-instructions per second and, for AES, MB/s.
Correctness is the tests' job (tests/kernels/); this only times. Whole-application rows
(BFS, NW, BP, LUD) time every launch of one run of the benchmark's host loop.
Writes its section of docs/benchmarks.md (with ``--write-docs``), by the paper's Table 1 name.

``--engine jit`` runs the same rows on the compiling engine (modules compiled before the
first launch; wall-clock seconds, since it runs blocks on a thread pool) and never writes.

Usage: .venv/bin/python scripts/bench/kernels.py [--quick] [--repeat N] [--write-docs]
       [--engine interp|jit]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import struct
import time
from types import SimpleNamespace

import numpy as np

from gdevd.gpu.mmu import Mmu
from gdevd.gpu.ptx import load_module
from gdevd.gpu.vram import Vram
from scripts.bench import benchdoc

ROOT = pathlib.Path(__file__).resolve().parents[2]
BASE = 1 << 36


class Dev:
    """One address space over a Vram, a bump allocator, and the modules' data segments."""

    def __init__(self, size: int = 256 << 20) -> None:
        self.vram = Vram(size)
        self.mmu = Mmu()
        self.mmu.set_aperture(0, self.vram.buffer)
        self.mmu.map(BASE, 0, size)
        self.top = BASE
        self.modules: dict[str, tuple] = {}

    def alloc(self, n: int) -> int:
        va = self.top
        self.top += max(n + 4095, 4096) // 4096 * 4096
        return va

    def upload(self, a) -> int:
        data = np.ascontiguousarray(a).tobytes()
        va = self.alloc(len(data))
        self.mmu.write(va, data)
        return va

    def module(self, file: str):
        if file not in self.modules:
            mod = load_module((ROOT / "kernels" / f"{file}.ptx").read_text(), file)
            if ENGINE == "jit":
                mod.start_compile(wait=True)
            layout = mod.data_layout()
            base = self.upload(np.frombuffer(layout.image, np.uint8)) if layout.size else 0
            self.modules[file] = (mod, base)
        return self.modules[file]

    def launch(self, file, kernel, grid, block, args, shared=0):
        """Prepare a launch; int args fill their parameter's size, floats become f32/f64."""
        mod, base = self.module(file)
        info = mod.kernels[kernel]
        buf = bytearray(info.param_size)
        for arg, p in zip(args, info.params, strict=True):
            if isinstance(arg, float):
                buf[p.offset:p.offset + p.size] = struct.pack({4: "<f", 8: "<d"}[p.size], arg)
            else:
                buf[p.offset:p.offset + p.size] = (arg % (1 << 8 * p.size)).to_bytes(p.size,
                                                                                   "little")
        g = tuple(grid) + (1,) * (3 - len(grid))
        b = tuple(block) + (1,) * (3 - len(block))
        return mod.launch(kernel, g, b, bytes(buf), self.mmu, base, shared)


ENGINE = "interp"
CLOCK = time.process_time


def timed(dev, repeat, *launch_args, **kw) -> tuple[float, object]:
    """Best process-CPU seconds (and its stats) of ``repeat`` identical launches."""
    best = None
    for _ in range(repeat):
        launch = dev.launch(*launch_args, **kw)
        t0 = CLOCK()
        while not launch.run():
            pass
        dt = CLOCK() - t0
        if best is None or dt < best[0]:
            best = (dt, launch.stats)
    return best


def timed_sequence(dev, repeat, body) -> tuple[float, object]:
    """Best process-CPU seconds of ``repeat`` runs of ``body(go)``, a host loop that calls
    ``go(file, kernel, grid, block, args)`` per launch; stats sum the launches'."""
    best = None
    for _ in range(repeat):
        total = SimpleNamespace(thread_instructions=0, launches=0)

        def go(*launch_args, total=total, **kw):
            launch = dev.launch(*launch_args, **kw)
            while not launch.run():
                pass
            total.thread_instructions += launch.stats.thread_instructions
            total.launches += 1

        t0 = CLOCK()
        body(go)
        dt = CLOCK() - t0
        if best is None or dt < best[0]:
            best = (dt, total)
    return best


ROWS: list[dict] = []
TABLE1 = {"madd": "MADD", "mmul": "MMUL", "loop": "LOOP", "aes": "(ecryptfs AES)",
          "hotspot": "HS", "srad": "SRAD2", "srad_v1": "SRAD", "lud": "LUD", "nn": "NN",
          "bfs": "BFS", "nw": "NW", "bp": "BP"}


def report(name: str, size: str, dt: float, stats, nbytes: int = 0) -> None:
    """Print one result as JSON and keep it for the docs section."""
    row = {"kernel": name, "size": size, "cpu_seconds": round(dt, 4),
           "thread_inst_per_s": round(stats.thread_instructions / dt)}
    if getattr(stats, "launches", 0):
        row["launches"] = stats.launches
    if nbytes:
        row["MB_per_s"] = round(nbytes / dt / 1e6, 3)
    ROWS.append(row)
    print(json.dumps(row), flush=True)


def markdown(quick: bool, repeat: int) -> str:
    """The docs/benchmarks.md section body: one row per timed kernel or application."""
    rows = []
    for r in ROWS:
        key = r["kernel"].split()[0].lower()
        key = "aes" if key.startswith("aes") else key
        rate = f"{r['thread_inst_per_s'] / 1e6:,.0f} M"
        if "MB_per_s" in r:
            rate += f" ({r['MB_per_s']:.2f} MB/s)"
        rows.append([TABLE1.get(key, "-"), r["kernel"], r["size"], r.get("launches", 1),
                     f"{r['cpu_seconds']:.4f}", rate])
    mode = "quick mode (small sizes)" if quick else "full mode"
    return (f"kernels/*.ptx (nvcc output) on the PTX engine alone, {mode}; process-CPU "
            f"seconds, best of {repeat}. Table 1's CPY/PINCPY are memcpy.py's and ioctl.py's; "
            "HW (heart wall) is not ported. No target is set for these run times: they are "
            "the baseline the paper's Fig. 6 compares (there against NVIDIA's driver).\n\n" +
            benchdoc.table(["Table 1", "kernel", "size", "launches", "CPU s",
                            "thread-instr/s"], rows))


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def bench_micro(dev: Dev, rng, quick: bool, repeat: int) -> None:
    n = 256 if quick else 1024
    a = dev.upload(rng.integers(0, 2**32, (n, n), dtype=np.uint64).astype(np.uint32))
    c = dev.alloc(4 * n * n)
    grid = (cdiv(n, 16), cdiv(n, 16))
    report("madd add", f"{n}x{n}", *timed(dev, repeat, "madd", "add", grid, (16, 16),
                                          [a, a, c, n]))
    m = 128 if quick else 512
    grid = (cdiv(m, 16), cdiv(m, 16))
    for kernel in ("multiply", "multiply_tiled"):
        report(f"mmul {kernel}", f"{m}x{m}",
               *timed(dev, repeat, "mmul", kernel, grid, (16, 16), [a, a, c, m]))
    size, trip = (4096, 100) if quick else (65536, 1000)
    report("loop loop", f"{size} threads x {trip}",
           *timed(dev, repeat, "loop", "loop", (cdiv(size, 256),), (256,), [c, size, trip]))


def bench_aes(dev: Dev, rng, quick: bool, repeat: int) -> None:
    nbytes = (64 if quick else 1024) << 10
    keys = dev.upload(np.frombuffer(rng.bytes(64), np.uint8))
    enc, dec = dev.alloc(480), dev.alloc(480)
    timed(dev, 1, "aes", "aes256_expand_keys", (1,), (32,), [keys, enc, dec, 2])
    data = dev.upload(np.frombuffer(rng.bytes(nbytes), np.uint8))
    out = dev.alloc(nbytes)
    nb, units = nbytes // 16, nbytes // 4096
    tweaks = dev.upload(np.arange(2 * units, dtype=np.uint64))
    grid = (cdiv(nb, 256),)
    for kernel, args in (("aes256_encrypt_ecb", [data, out, enc, nb]),
                         ("aes256_decrypt_ecb", [data, out, dec, nb]),
                         ("aes256_xts_encrypt", [data, out, enc, enc + 240, tweaks, nb, 256]),
                         ("aes256_xts_decrypt", [data, out, dec, enc + 240, tweaks, nb, 256])):
        dt, st = timed(dev, repeat, "aes", kernel, grid, (256,), args)
        report(kernel, f"{nbytes >> 10} KiB, 4 KiB units", dt, st, nbytes)


def bench_rodinia(dev: Dev, rng, quick: bool, repeat: int) -> None:
    n = 64 if quick else 256
    f = dev.upload(rng.random((n, n)).astype(np.float32) + 1)
    g = dev.alloc(4 * n * n)
    pyramid = 2
    small = 16 - 2 * pyramid
    args = [pyramid, f, f, g, n, n, pyramid, pyramid, 1.0, 1.0, 1.0, 1.0, 1e-3, 0.0]
    report("hotspot calculate_temp", f"{n}x{n}, 2 steps",
           *timed(dev, repeat, "hotspot", "calculate_temp", (cdiv(n, small), cdiv(n, small)),
                  (16, 16), args))
    dirs = [dev.alloc(4 * n * n) for _ in range(5)]
    report("srad srad_cuda_1", f"{n}x{n}",
           *timed(dev, repeat, "srad", "srad_cuda_1", (n // 16, n // 16), (16, 16),
                  [*dirs[:4], f, dirs[4], n, n, 0.05]))
    m = dev.upload((rng.random((n, n)) + n * np.eye(n)).astype(np.float32))
    nb = n // 16 - 1
    report("lud lud_internal", f"{n}x{n}, first step",
           *timed(dev, repeat, "lud", "lud_internal", (nb, nb), (16, 16), [m, n, 0]))
    records = 16384 if quick else 262144
    loc = dev.upload(rng.random((records, 2)).astype(np.float32))
    report("nn euclid", f"{records} records",
           *timed(dev, repeat, "nn", "euclid", (cdiv(records, 256),), (256,),
                  [loc, dev.alloc(4 * records), records, 0.5, 0.5]))


def nw_app(dev: Dev, rng, length: int, penalty: int = 10):
    """Needleman-Wunsch's host loop over a ``length`` square (both sweeps, 16-thread blocks):
    a function ``body(go)`` for :func:`timed_sequence`."""
    cols = length + 1
    ref = dev.upload(rng.integers(-4, 12, size=(cols, cols)).astype(np.int32))
    mat = dev.alloc(4 * cols * cols)
    width = length // 16

    def nw(go):
        m = np.zeros((cols, cols), np.int32)
        m[0, :] = m[:, 0] = -penalty * np.arange(cols)
        dev.mmu.write(mat, m.tobytes())
        for i in range(1, width + 1):
            go("nw", "needle_cuda_shared_1", (i,), (16,), [ref, mat, cols, penalty, i, width])
        for i in range(width - 1, 0, -1):
            go("nw", "needle_cuda_shared_2", (i,), (16,), [ref, mat, cols, penalty, i, width])
    return nw


def lud_app(dev: Dev, rng, dim: int):
    """LU decomposition's host loop over a ``dim`` square matrix (every step)."""
    a = (rng.random((dim, dim)) + dim * np.eye(dim)).astype(np.float32)
    pm = dev.alloc(a.nbytes)

    def lud(go):
        dev.mmu.write(pm, a.tobytes())
        i = 0
        for i in range(0, dim - 16, 16):
            go("lud", "lud_diagonal", (1,), (16,), [pm, dim, i])
            nb = (dim - i) // 16 - 1
            go("lud", "lud_perimeter", (nb,), (32,), [pm, dim, i])
            go("lud", "lud_internal", (nb, nb), (16, 16), [pm, dim, i])
        go("lud", "lud_diagonal", (1,), (16,), [pm, dim, i + 16])
    return lud


def bench_apps(dev: Dev, rng, quick: bool, repeat: int) -> None:
    """Whole host loops: BFS to completion, NW's two sweeps, BP's two kernels, full LUD."""
    n, degree = (4096, 4) if quick else (65536, 4)
    counts = rng.integers(0, degree + 1, size=n).astype(np.int32)
    starting = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int32)
    nodes = dev.upload(np.stack([starting, counts], 1))
    edges = dev.upload(rng.integers(0, n, size=int(counts.sum())).astype(np.int32))
    mask, upd, vis = (dev.alloc(n) for _ in range(3))
    cost, over = dev.alloc(4 * n), dev.alloc(1)

    def bfs(go):
        first = np.zeros(n, np.uint8)
        first[0] = 1
        dev.mmu.write(mask, first.tobytes())
        dev.mmu.write(vis, first.tobytes())
        dev.mmu.write(upd, bytes(n))
        dev.mmu.write(cost, np.where(first, 0, -1).astype(np.int32).tobytes())
        for _ in range(n + 1):
            dev.mmu.write(over, b"\0")
            go("bfs", "Kernel", (cdiv(n, 512),), (512,), [nodes, edges, mask, upd, vis, cost, n])
            go("bfs", "Kernel2", (cdiv(n, 512),), (512,), [mask, upd, vis, over, n])
            if dev.mmu.read(over, 1) == b"\0":
                break

    report("bfs Kernel+Kernel2", f"{n} nodes, degree <= {degree}, to completion",
           *timed_sequence(dev, repeat, bfs))
    length = 256 if quick else 1024
    nw = nw_app(dev, rng, length)
    report("nw needle_cuda_shared_1+2", f"{length}x{length}", *timed_sequence(dev, repeat, nw))
    n_in, hid = (4096 if quick else 65536), 16
    inp = dev.upload(rng.random(n_in + 1).astype(np.float32))
    w = dev.upload(rng.uniform(-1, 1, (n_in + 1, hid + 1)).astype(np.float32))
    oldw = dev.upload(np.zeros((n_in + 1, hid + 1), np.float32))
    partial = dev.alloc(4 * hid * (n_in // 16))
    delta = dev.upload(rng.uniform(-1, 1, hid + 1).astype(np.float32))

    def bp(go):
        go("backprop", "bpnn_layerforward_CUDA", (1, n_in // 16), (16, 16),
           [inp, 0, w, partial, n_in, hid])
        go("backprop", "bpnn_adjust_weights_cuda", (1, n_in // 16), (16, 16),
           [delta, hid, inp, n_in, w, oldw])

    report("bp layerforward+adjust_weights", f"{n_in} inputs x {hid} hidden",
           *timed_sequence(dev, repeat, bp))
    dim = 64 if quick else 256
    lud = lud_app(dev, rng, dim)
    report("lud diagonal+perimeter+internal", f"{dim}x{dim}, all steps",
           *timed_sequence(dev, repeat, lud))
    nr = nc = 64 if quick else 512
    ne, threads = nr * nc, 512
    pi = dev.upload(rng.integers(1, 256, size=(nc, nr)).astype(np.float32))
    r, c = np.arange(nr, dtype=np.int32), np.arange(nc, dtype=np.int32)
    idx = [dev.upload(np.maximum(r - 1, 0)), dev.upload(np.minimum(r + 1, nr - 1)),
           dev.upload(np.minimum(c + 1, nc - 1)), dev.upload(np.maximum(c - 1, 0)),
           *(dev.alloc(4 * ne) for _ in range(4))]
    pc = dev.alloc(4 * ne)

    def srad_v1(go):
        blocks = (cdiv(ne, threads),)
        go("srad_v1", "srad", blocks, (threads,), [0.5, nr, nc, ne, *idx, 0.05, pc, pi])
        go("srad_v1", "srad2", blocks, (threads,), [0.5, nr, nc, ne, *idx, pc, pi])

    report("srad_v1 srad+srad2", f"{nr}x{nc}, one iteration",
           *timed_sequence(dev, repeat, srad_v1))


def main() -> None:
    run = benchdoc.Run()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (seconds, not minutes)")
    ap.add_argument("--engine", choices=("interp", "jit"), default="interp")
    ap.add_argument("--repeat", type=int, default=3, help="launches per measurement")
    benchdoc.add_write_flag(ap)
    args = ap.parse_args()
    global ENGINE, CLOCK
    if args.engine == "jit":   # the docs table is the interpreter's
        ENGINE, CLOCK, args.write_docs = "jit", time.perf_counter, False
    rng = np.random.default_rng(0)
    dev = Dev()
    for bench in (bench_micro, bench_aes, bench_rodinia, bench_apps):
        bench(dev, rng, args.quick, args.repeat)
    if args.write_docs:
        benchdoc.write_section("kernels.py", "Table 1 kernels on the PTX engine "
                               "(scripts/bench/kernels.py, issue 3)",
                               markdown(args.quick, args.repeat), run)


if __name__ == "__main__":
    main()
