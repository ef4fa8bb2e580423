"""Device-function calls from nvcc: function pointers, struct returns, mixed arguments."""

from __future__ import annotations

import struct

import numpy as np

from .helpers import Device, load

MOD = load("calls")


def test_function_pointers_struct_returns_many_args():
    dev = Device()
    n = 200
    x = np.random.default_rng(9).integers(0, 1000, n).astype(np.int32)
    px, po, pf = dev.put(x), dev.alloc(n * 16), dev.alloc(n * 4)
    v = (1.5, -2.0, 0.25)
    dev.launch(MOD, "calls", (2,), (128,), px, po, pf, (struct.pack("<3f", *v), "12s"), n)
    out = dev.get(po, 2 * n, np.int64).reshape(n, 2)
    fout = dev.get(pf, n, np.float32)
    for i in range(n):
        a = int(x[i])
        f = [lambda p, q: p + q, lambda p, q: p * q, lambda p, q: p - q][a % 3]
        ax, ay, az = np.float32(a), np.float32(1), np.float32(2)
        vx, vy, vz = (np.float32(t) for t in v)
        cx, cy, cz = ay * vz - az * vy, az * vx - ax * vz, ax * vy - ay * vx
        exp0 = f(a, i) + a * (a & 7) + int(a * 0.5)
        exp1 = (a + (i << 35) + int(cx) + int(a * 0.5) + int(np.int16(i)) + (i & 255)
                + int(x[0]) + 12)
        assert out[i].tolist() == [exp0, exp1], i
        assert fout[i] == np.float32(cx + cy + cz)


def test_grid_constant_parameter_address():
    """``__grid_constant__`` structs are read through their address (cvta.param, generic
    loads and register-addressed ld.param); by-value copies go through local memory."""
    mod = load("gridconst")
    dev = Device()
    s = np.arange(1, 9, dtype=np.int32) * 3
    for kernel in ("k", "k2"):
        po = dev.alloc(64 * 4)
        dev.launch(mod, kernel, (1,), (64,), (s.tobytes(), "32s"), po, 5)
        got = dev.get(po, 64, np.int32)
        assert got.tolist() == [int(s[:5].sum() + s[t & 7]) for t in range(64)], kernel
