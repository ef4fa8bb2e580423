"""The Gdev API walked through in-process, without the daemon.

Run: `.venv/bin/python scripts/demo_inprocess.py`.

This boots the default machine (one GPU with 1 GiB, four vGPUs with equal shares) in this
process through ``gdevd.gdev`` and walks the Gdev API: contexts on two vGPUs, allocation
against the shares, every memcpy path, a pinned async copy with a fence, a cross-context
reference, and a kernel launch.  ``make run`` does the same through the daemon.
"""

from __future__ import annotations

import argparse
import struct
import sys
import time
from pathlib import Path

import numpy as np

from gdevd import gdev
from gdevd.errors import GdevError
from gdevd.gpu.ptx import load_module

MiB = 1 << 20
ROOT = Path(__file__).resolve().parents[1]


def show_machine() -> None:
    system = gdev.system()
    for p in system.physical:
        print(f"  {p!r}")
    for v in system.virtual:
        print(f"  vGPU {v.minor} (/dev/gdev{v.minor}): share {v.memory_share}% = "
              f"{v.memory_size // MiB} MiB on gpu{v.phys.index}")


def copies(h: gdev.Handle) -> None:
    n = 64 * MiB
    va = gdev.gmalloc(h, n)
    data = np.random.default_rng(0).integers(0, 256, n, dtype=np.uint8)
    for size in (4096, 2 * MiB, n):
        t0 = time.perf_counter()
        gdev.gmemcpy_to_device(h, va, data, size)
        out = np.empty(size, np.uint8)
        gdev.gmemcpy_from_device(h, out, va, size)
        dt = time.perf_counter() - t0
        assert np.array_equal(out, data[:size])
        print(f"  round trip of {size:>9} bytes: {2 * size / dt / 1e9:6.2f} GB/s")
    pin = gdev.gmalloc_dma(h, n)
    fid = gdev.gmemcpy_from_device_async(h, pin, va, n)
    gdev.gsync(h, fid)
    assert np.array_equal(pin.array, data)
    print(f"  pinned async DtoH of 64 MiB: fence {fid} done; paths used: "
          f"{dict(sorted((k, v) for k, v in h.handle.counters.copies.items() if '_' not in k))}")
    gdev.gfree_dma(h, pin)
    gdev.gfree(h, va)


def reference(a: gdev.Handle, b: gdev.Handle) -> None:
    va = gdev.gmalloc(a, 4096)
    gdev.gmemcpy_to_device(a, va, b"hello from vGPU 0", 17)
    vb = gdev.gref(a, va, 4096, b)
    out = bytearray(17)
    gdev.gmemcpy_from_device(b, out, vb, 17)
    print(f"  gref: context on vGPU 1 reads {bytes(out)!r} at {vb:#x}")
    gdev.gunref(b, vb)
    try:
        gdev.gmemcpy_from_device(b, out, vb, 17)
    except GdevError as e:
        print(f"  after gunref the address is gone: {e}")


def launch(h: gdev.Handle) -> None:
    ptx = ROOT / "tests" / "runtime" / "data" / "vadd.ptx"
    text = ptx.read_bytes()
    code = gdev.gmalloc(h, len(text))
    gdev.gmemcpy_to_device(h, code, text, len(text))
    layout = load_module(text.decode()).data_layout()
    data = gdev.gmalloc(h, max(layout.size, 1))
    if layout.size:
        gdev.gmemcpy_to_device(h, data, layout.image, layout.size)
    n = 1000
    a, b = np.arange(n, dtype=np.int32), np.full(n, 7, np.int32)
    va, vb, vc = (gdev.gmalloc(h, 4 * n) for _ in range(3))
    gdev.gmemcpy_to_device(h, va, a, 4 * n)
    gdev.gmemcpy_to_device(h, vb, b, 4 * n)
    k = gdev.GdevKernel(code, len(text), "vadd", grid=((n + 255) // 256, 1, 1),
                        block=(256, 1, 1), params=struct.pack("<QQQi", va, vb, vc, n),
                        data_addr=data)
    gdev.gsync(h, gdev.glaunch(h, k), timeout=60)
    c = np.empty(n, np.int32)
    gdev.gmemcpy_from_device(h, c, vc, 4 * n)
    print(f"  vadd of {n} ints on the emulated GPU: {'correct' if (c == a + b).all() else 'WRONG'}")


def main() -> int:
    argparse.ArgumentParser(description=__doc__.split("\n")[0]).parse_args()
    print("gdev-py: booting the default emulated machine in-process")
    gdev.boot()
    try:
        show_machine()
        with gdev.gopen(0) as a, gdev.gopen(1) as b:
            print(f"  contexts: {a.handle!r}, {b.handle!r}")
            copies(a)
            reference(a, b)
            launch(a)
            gdev.check_invariants()
        print("gdev-py: all contexts closed, memory invariants hold")
    finally:
        gdev.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
