"""The repository's kernels (kernels/*.ptx) on the PTX engine: time per launch at benchmark sizes.

Prints one JSON object per line: the kernel, its size, process-CPU seconds of the best of
``--repeat`` launches (CPU time, as scripts/bench/compute.py argues: the executor is one
thread on a shared machine), thread-instructions per second and, for AES, MB/s.
Correctness is the tests' job (tests/kernels/); this only times.

Usage: .venv/bin/python scripts/bench/kernels.py [--quick] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import struct
import time

import numpy as np

from gdevd.gpu.mmu import Mmu
from gdevd.gpu.ptx import load_module
from gdevd.gpu.vram import Vram

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


def timed(dev, repeat, *launch_args, **kw) -> tuple[float, object]:
    """Best process-CPU seconds (and its stats) of ``repeat`` identical launches."""
    best = None
    for _ in range(repeat):
        launch = dev.launch(*launch_args, **kw)
        t0 = time.process_time()
        while not launch.run():
            pass
        dt = time.process_time() - t0
        if best is None or dt < best[0]:
            best = (dt, launch.stats)
    return best


def report(name: str, size: str, dt: float, stats, nbytes: int = 0) -> None:
    row = {"kernel": name, "size": size, "cpu_seconds": round(dt, 4),
           "thread_inst_per_s": round(stats.thread_instructions / dt)}
    if nbytes:
        row["MB_per_s"] = round(nbytes / dt / 1e6, 3)
    print(json.dumps(row), flush=True)


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (seconds, not minutes)")
    ap.add_argument("--repeat", type=int, default=3, help="launches per measurement")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    dev = Dev()
    for bench in (bench_micro, bench_aes, bench_rodinia):
        bench(dev, rng, args.quick, args.repeat)


if __name__ == "__main__":
    main()
