"""Texture fetch throughput on both engines, side by side in one run.

A 512x512 float4 pitch-2D texture sampled by ``tex2d_f4`` (tests/ptx/data/texture.ptx) at
random coordinates, point and linear (bilinear: four taps), and by ``fetch_f4``
(``tex1Dfetch``); its 10-level mipmapped form (tests/ptx/data/mipmap.ptx) by ``tex2DLod``
and ``tex2DGrad`` (bilinear in two levels: eight taps) and ``tex2Dgather``; prints samples
per second per engine and the compiled/interpreter ratio (best of ``--repeat`` launches
each, wall clock; the machine is shared, so compare ratios).

    .venv/bin/python scripts/bench/texture.py [--samples N] [--repeat R]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from gdevd.gpu.mmu import Mmu
from gdevd.gpu.ptx import jit, load_module
from gdevd.gpu.texture import TextureTable
from gdevd.gpu.vram import Vram
from gdevd.runtime.texdesc import validate
from libgdev import texture as T

DATA = Path(__file__).resolve().parents[2] / "tests" / "ptx" / "data"
BASE = 1 << 32


class _Memory:
    """A bump allocator over one mapped region."""

    def __init__(self, size: int) -> None:
        self.vram, self.mmu = Vram(size), Mmu()
        self.mmu.set_aperture(0, self.vram.buffer)
        self.mmu.map(BASE, 0, size)
        self.top = BASE

    def put(self, arr: np.ndarray) -> int:
        va = (self.top + 255) // 256 * 256
        self.top = va + arr.nbytes
        self.mmu.write(va, np.ascontiguousarray(arr).tobytes())
        return va


def _run(mod, mem: _Memory, table, kernel: str, params: list[int], n: int, repeat: int) -> float:
    """Best seconds of ``repeat`` launches of ``kernel`` over ``n`` threads."""
    info = mod.kernels[kernel]
    buf = bytearray(info.param_size)
    for p, v in zip(info.params, params, strict=True):
        buf[p.offset:p.offset + p.size] = v.to_bytes(p.size, "little")
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        launch = mod.launch(kernel, ((n + 255) // 256, 1, 1), (256, 1, 1), bytes(buf),
                            mem.mmu, mem.put(np.zeros(16, np.uint8)), textures=table)
        launch.run()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=1 << 16)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    n, side = args.samples, 512
    mem = _Memory(64 << 20)
    rng = np.random.default_rng(1)
    img = rng.uniform(-1, 1, (side, side, 4)).astype(np.float32)
    va = mem.put(img)
    table = TextureTable()
    handles = {linear: table.create(validate(T.tex_desc(
        T.TEX_RESOURCE_PITCH2D, va, T.TEX_FORMAT_FLOAT, 4, side, side, side * 16,
        linear=linear))) for linear in (False, True)}
    levels = [rng.uniform(-1, 1, (side >> k, side >> k, 4)).astype(np.float32)
              for k in range(10)]
    mip_va = mem.put(np.concatenate([lv.ravel() for lv in levels]))
    handles["mip"] = table.create(validate(T.tex_desc(
        T.TEX_RESOURCE_PITCH2D, mip_va, T.TEX_FORMAT_FLOAT, 4, side, side, side * 16,
        linear=True, normalized_coords=True, levels=10, mip_linear=True, max_lod=9.0)))
    xs = mem.put(rng.uniform(0, side, n).astype(np.float32))
    ys = mem.put(rng.uniform(0, side, n).astype(np.float32))
    us = mem.put(rng.uniform(0, 1, n).astype(np.float32))
    lods = mem.put(rng.uniform(0, 9, n).astype(np.float32))
    grads = mem.put(rng.uniform(-0.02, 0.02, (n, 2)).astype(np.float32))
    idx = mem.put(rng.integers(0, side * side, n).astype(np.int32))
    out = mem.put(np.zeros((n, 4), np.float32))
    cases = {"tex2D point": ("texture", "tex2d_f4", [handles[False], xs, ys, out, n]),
             "tex2D linear": ("texture", "tex2d_f4", [handles[True], xs, ys, out, n]),
             "tex1Dfetch": ("texture", "fetch_f4", [handles[False], idx, out, n]),
             "tex2DLod": ("mipmap", "lod2d_f4", [handles["mip"], us, us, lods, out, n]),
             "tex2DGrad": ("mipmap", "grad2d_f4", [handles["mip"], us, us, grads, grads,
                                                   out, n]),
             "tex2Dgather": ("mipmap", "gather_f4", [handles[False], xs, ys, 1, out, n])}
    print(f"{n} samples of a {side}x{side} float4 texture, best of {args.repeat}")
    for name, (ptx, kernel, params) in cases.items():
        rates = {}
        for engine in ("interp", "jit"):
            jit.set_engine(engine)
            mod = load_module((DATA / f"{ptx}.ptx").read_text(), ptx)
            rates[engine] = n / _run(mod, mem, table, kernel, params, n, args.repeat)
        print(f"{name:14s} interp {rates['interp'] / 1e6:8.2f} M/s   jit "
              f"{rates['jit'] / 1e6:8.2f} M/s   jit/interp {rates['jit'] / rates['interp']:6.1f}x")


if __name__ == "__main__":
    main()
