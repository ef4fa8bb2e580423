"""Interpreter vs compiling engine, side by side in one run (``compute.py --engines``).

Every figure is wall-clock seconds, best of ``REPEAT`` launches on the same arrays, so the
ratios within one run hold on a loaded machine even when the absolute numbers do not.
"""

from __future__ import annotations

import ctypes
import os
import pathlib
import subprocess
import tempfile
import time
from collections.abc import Iterator

import numpy as np

from gdevd.gpu.ptx import load_module
from gdevd.gpu.ptx.jit import launch as jlaunch
from gdevd.gpu.ptx.jit.build import compiler  # noqa: I001
from scripts.bench import compute

ROOT = pathlib.Path(__file__).resolve().parents[2]
BENCH = ROOT / "tests" / "ptx" / "data" / "bench.ptx"
KERNELS = ROOT / "kernels"
BASE = 1 << 32
REPEAT = 5
# steps per slice of the sliced AES rows: about 1 ms of AES-XTS on two threads (the compute
# engine's quanta), and 1/16 of that
SLICED = (65536, 4096)


class Dev(compute.Dev):
    """compute.py's device memory, with arrays copied in."""

    def put(self, arr: np.ndarray) -> int:
        va = self.alloc(arr.nbytes)
        self.mmu.write(va, arr.tobytes())
        return va


def pack(*vals: tuple[int, int]) -> bytes:
    """(value, size) pairs at natural alignment."""
    out = bytearray()
    for v, size in vals:
        out += bytes(-len(out) % size) + int(v).to_bytes(size, "little")
    return bytes(out)


def params_of(mod, kernel: str, args: list[int]) -> bytes:
    """A kernel's parameter buffer: each integer at its parameter's offset and size."""
    info = mod.kernels[kernel]
    buf = bytearray(info.param_size)
    for arg, p in zip(args, info.params, strict=True):
        buf[p.offset:p.offset + p.size] = (arg % (1 << 8 * p.size)).to_bytes(p.size, "little")
    return bytes(buf)


def best(make, repeat: int = REPEAT, budget: int = 1 << 20) -> tuple[float, object]:
    """(best wall seconds, stats) of ``repeat`` launches made by ``make()``, each run in
    slices of ``budget`` steps."""
    out = None
    for _ in range(repeat):
        launch = make()
        t0 = time.perf_counter()
        while not launch.run(budget):
            pass
        dt = time.perf_counter() - t0
        if out is None or dt < out[0]:
            out = (dt, launch.stats)
    return out


def modules(path: pathlib.Path, name: str):
    """(interpreted module, compiled module) of one PTX file."""
    text = path.read_text()
    interp, comp = load_module(text, name), load_module(text, name)
    comp.start_compile(wait=True)
    assert comp.jit.status == "jit", comp.jit.error
    return interp, comp


def side_by_side(name: str, interp, comp, kernel, grid, block, params, dev, rate_of,
                 repeat=REPEAT, data_base=0) -> dict:
    """One kernel on both engines: seconds, the rate ``rate_of(stats, s)``, the speed-up."""
    ti, si = best(lambda: interp.launch(kernel, grid, block, params, dev.mmu, data_base), 2)
    tj, _ = best(lambda: comp.launch(kernel, grid, block, params, dev.mmu, data_base), repeat)
    return {"bench": name, "interp_s": round(ti, 4), "jit_s": round(tj, 5),
            "interp_rate": round(rate_of(si, ti)), "jit_rate": round(rate_of(si, tj)),
            "speedup": round(ti / tj, 1)}


def bench_loops(quick: bool) -> list[dict]:
    interp, comp = modules(BENCH, "bench")
    trip = 2000 if quick else 20000
    dev = Dev(1 << 20)
    out = dev.put(np.zeros(64, np.uint32))
    warp = side_by_side("one-warp-loop (warp-instr/s)", interp, comp, "fmad_loop", (1, 1, 1),
                        (32, 1, 1), pack((out, 8), (trip, 4)), dev,
                        lambda st, s: st.instructions / s)
    threads = 1 << 16
    dev = Dev(threads * 4 + 8192)
    out = dev.put(np.zeros(threads, np.uint32))
    p = pack((out, 8), (threads, 4), (64, 4))
    wide = side_by_side("wide-loop 65536 threads (thread-instr/s)", interp, comp, "loop",
                        (threads // 256, 1, 1), (256, 1, 1), p, dev,
                        lambda st, s: st.thread_instructions / s)
    rows = [warp, wide]
    long = pack((out, 8), (threads, 4), (4096, 4))    # enough work per launch to share
    for n in (1, 2):
        rows.append(on_threads(n, lambda: comp.launch("loop", (threads // 256, 1, 1),
                                                      (256, 1, 1), long, dev.mmu, 0)))
    jlaunch.set_threads(os.cpu_count() or 1)
    rows.append({"bench": "2 threads vs 1", "ratio": round(rows[-2]["jit_s"] / rows[-1]["jit_s"],
                                                           2)})
    return rows


def on_threads(n: int, make) -> dict:
    """The wide loop on ``n`` engine threads: best wall seconds, and the process CPU seconds
    per wall second of that run (``n`` when the threads ran in parallel and nothing, GIL,
    page-table lock or shared state, serialized them; less when the machine was busy)."""
    jlaunch.set_threads(n)
    wall = cpu = 0.0
    for _ in range(REPEAT):
        launch = make()
        t0, c0 = time.perf_counter(), time.process_time()
        while not launch.run(1 << 20):
            pass
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        if not wall or dt < wall:
            wall, cpu = dt, dc
    return {"bench": f"wide-loop (4096 trips) on {n} engine thread(s)", "jit_s": round(wall, 5),
            "cpu_per_wall": round(cpu / wall, 2)}


def bench_madd() -> dict:
    interp, comp = modules(BENCH, "bench")
    n = 1024
    a = np.arange(n * n, dtype=np.uint32)
    b = a * 3
    dev = Dev(3 * a.nbytes + 8192)
    pa, pb, pc = dev.put(a), dev.put(b), dev.put(np.zeros_like(a))
    p = pack((pa, 8), (pb, 8), (pc, 8), (n, 4))
    row = side_by_side("MADD 1024x1024", interp, comp, "madd", (n // 16, n // 16, 1),
                       (16, 16, 1), p, dev, lambda st, s: st.thread_instructions / s)
    assert np.array_equal(np.frombuffer(dev.mmu.read(pc, a.nbytes), np.uint32), a + b)
    tn = min(_timed(lambda: a + b) for _ in range(20))
    row.update(numpy_s=round(tn, 5), jit_vs_numpy=round(row["jit_s"] / tn, 1))
    return row


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


C_MMUL = """
#include <stdint.h>
void mmul(const uint32_t *a, const uint32_t *b, uint32_t *c, uint32_t n) {
    for (uint32_t row = 0; row < n; row++)
        for (uint32_t col = 0; col < n; col++) {
            uint32_t sum = 0;
            for (uint32_t k = 0; k < n; k++) sum += a[row * n + k] * b[k * n + col];
            c[row * n + col] = sum;
        }
}
"""


def bench_mmul(n: int) -> dict:
    interp, comp = modules(KERNELS / "mmul.ptx", "mmul")
    rng = np.random.default_rng(1)
    a = rng.integers(0, 1 << 32, n * n, dtype=np.uint32)
    b = rng.integers(0, 1 << 32, n * n, dtype=np.uint32)
    dev = Dev(3 * a.nbytes + 8192)
    pa, pb, pc = dev.put(a), dev.put(b), dev.put(np.zeros_like(a))
    p = pack((pa, 8), (pb, 8), (pc, 8), (n, 4))
    g = ((n + 15) // 16, (n + 15) // 16, 1)
    tj, _ = best(lambda: comp.launch("multiply", g, (16, 16, 1), p, dev.mmu, 0), 2)
    got = np.frombuffer(dev.mmu.read(pc, a.nbytes), np.uint32)
    with tempfile.TemporaryDirectory() as tmp:
        src, so = pathlib.Path(tmp) / "m.c", pathlib.Path(tmp) / "m.so"
        src.write_text(C_MMUL)
        subprocess.run([compiler(), "-O2", "-shared", "-fPIC", "-o", str(so), str(src)],
                       check=True)
        lib = ctypes.CDLL(str(so))
        c = np.zeros_like(a)
        ptr = ctypes.c_void_p
        tc = min(_timed(lambda: lib.mmul(ptr(a.ctypes.data), ptr(b.ctypes.data),
                                         ptr(c.ctypes.data), ctypes.c_uint32(n)))
                 for _ in range(2))
    assert np.array_equal(got, c)
    return {"bench": f"naive MMUL {n}", "jit_s": round(tj, 4), "c_O2_s": round(tc, 4),
            "jit_vs_c": round(tj / tc, 2), "threads": jlaunch.THREADS}


def _app_seconds(engine: str, make, repeat: int) -> float:
    """Best wall seconds of a whole host loop (kernels.py's) on one engine."""
    from scripts.bench import kernels
    kernels.ENGINE, kernels.CLOCK = engine, time.perf_counter
    dev = kernels.Dev(64 << 20)
    body = make(kernels, dev, np.random.default_rng(0))
    kernels.timed_sequence(dev, 1, body)          # loads (and compiles) the modules
    return kernels.timed_sequence(dev, repeat, body)[0]


def bench_apps(quick: bool) -> list[dict]:
    """NW and LUD whole applications (every launch of one run of the host loop)."""
    nw_len, lud_dim = (256, 64) if quick else (512, 128)
    apps = {f"NW {nw_len}x{nw_len}": lambda k, dev, rng: k.nw_app(dev, rng, nw_len),
            f"LUD {lud_dim}x{lud_dim}": lambda k, dev, rng: k.lud_app(dev, rng, lud_dim)}
    rows = []
    for name, make in apps.items():
        ti = _app_seconds("interp", make, 1)
        tj = _app_seconds("jit", make, REPEAT)
        rows.append({"bench": f"{name} application", "interp_s": round(ti, 4),
                     "jit_s": round(tj, 4), "speedup": round(ti / tj, 1)})
    return rows


def _xts_openssl(key: bytes, tweaks: bytes, data: bytes, unit: int) -> bytes:
    """AES-256-XTS of ``data`` by OpenSSL (``cryptography``), one tweak per ``unit`` bytes."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    out = bytearray()
    for u in range(len(data) // unit):
        enc = Cipher(algorithms.AES(key), modes.XTS(tweaks[16 * u:16 * u + 16])).encryptor()
        out += enc.update(data[u * unit:(u + 1) * unit]) + enc.finalize()
    return bytes(out)


def bench_aes(quick: bool) -> list[dict]:
    """AES-XTS encryption (the ecryptfs kernel, 256 threads per block) in MB/s, on every
    engine thread and on one; the compiled result must be OpenSSL's."""
    from scripts.bench import kernels
    nbytes = (256 if quick else 1024) << 10
    interp, comp = modules(KERNELS / "aes.ptx", "aes")
    rng = np.random.default_rng(0)
    dev = Dev(4 * nbytes + (1 << 20))
    image = interp.data_layout().image
    base = dev.put(np.frombuffer(image, np.uint8)) if image else 0
    key = rng.bytes(64)
    keys = dev.put(np.frombuffer(key, np.uint8))
    enc, dec = dev.alloc(4096), dev.alloc(4096)
    launch = interp.launch("aes256_expand_keys", (1, 1, 1), (32, 1, 1),
                           params_of(interp, "aes256_expand_keys", [keys, enc, dec, 2]),
                           dev.mmu, base)
    while not launch.run():
        pass
    plain = rng.bytes(nbytes)
    data = dev.put(np.frombuffer(plain, np.uint8))
    out = dev.alloc(nbytes)
    nb, units = nbytes // 16, nbytes // 4096
    tw = np.arange(2 * units, dtype=np.uint64)
    tweaks = dev.put(tw)
    p = params_of(interp, "aes256_xts_encrypt", [data, out, enc, enc + 240, tweaks, nb, 256])
    grid = (kernels.cdiv(nb, 256), 1, 1)
    row = side_by_side("AES-XTS encrypt (MB/s)", interp, comp, "aes256_xts_encrypt",
                       grid, (256, 1, 1), p, dev, lambda st, s: nbytes / s / 1e6,
                       data_base=base)
    assert dev.mmu.read(out, nbytes) == _xts_openssl(key, tw.tobytes(), plain, 4096), \
        "the compiled AES-XTS kernel's ciphertext is not OpenSSL's"
    # in slices, as the compute engine runs it: what a slice costs beyond its work
    # (jit/team.h)
    sliced = []
    for steps in SLICED:
        ts, _ = best(lambda: comp.launch("aes256_xts_encrypt", grid, (256, 1, 1), p, dev.mmu,
                                         base), budget=steps)
        sliced.append({"bench": f"AES-XTS encrypt in {steps}-step slices (MB/s)",
                       "jit_rate": round(nbytes / ts / 1e6),
                       "sliced_vs_whole": round(ts / row["jit_s"], 2)})
    jlaunch.set_threads(1)
    try:
        t1, _ = best(lambda: comp.launch("aes256_xts_encrypt", grid, (256, 1, 1), p, dev.mmu,
                                         base))
    finally:
        jlaunch.set_threads(os.cpu_count() or 1)
    return [row, *sliced, {"bench": "AES-XTS encrypt on 1 engine thread (MB/s)",
                          "jit_rate": round(nbytes / t1 / 1e6)}]


def run_all(quick: bool) -> Iterator[dict]:
    """Every side-by-side measurement, row by row as each is measured, each with the load
    average at that moment (the machine may be shared: ratios within a row hold, the load
    says how far the absolute numbers and the thread scaling do)."""
    from scripts.bench import compile as cbench
    steps = [lambda: bench_loops(quick), bench_madd, lambda: bench_mmul(256 if quick else 512),
             lambda: bench_aes(quick), lambda: bench_apps(quick), cbench.bench_aes_compile,
             cbench.bench_first_native_launch, cbench.bench_compile_beside_kernels]
    for step in steps:
        out = step()
        for row in out if isinstance(out, list) else [out]:
            yield {**row, "load1": round(os.getloadavg()[0], 2)}
