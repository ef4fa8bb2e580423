"""CUDA math-library functions (long nvcc-inlined sequences) against Python's math."""

from __future__ import annotations

import math

import numpy as np

from .helpers import Device, load

MOD = load("mathlib")

F = [math.exp, math.log, math.sin, math.cos, math.tan, math.pow, math.atan2, math.tanh,
     math.erf, math.fmod, math.lgamma, lambda x: math.copysign(abs(x) ** (1 / 3), x),
     math.exp, math.hypot]
UNARY_Y = {1, 10}
BINARY = {5: lambda x, y: math.pow(y, x), 6: math.atan2, 9: math.fmod, 13: math.hypot}


def _expected(k: int, x: float, y: float) -> float:
    if k in BINARY:
        return BINARY[k](x, y)
    return F[k](y if k in UNARY_Y else x)


def test_float_math_library():
    rng = np.random.default_rng(11)
    n = 256
    x = rng.uniform(-4, 4, n).astype(np.float32)
    y = rng.uniform(0.1, 8, n).astype(np.float32)
    dev = Device()
    px, py, po = dev.put(x), dev.put(y), dev.alloc(n * 14 * 4)
    dev.launch(MOD, "fmath", (2,), (128,), px, py, po, n)
    out = dev.get(po, n * 14, np.float32).reshape(n, 14)
    for k in range(14):
        exp = np.array([_expected(k, float(a), float(b)) for a, b in zip(x, y, strict=True)])
        tol = 2e-3 if k == 12 else 1e-5      # __expf is the fast approximation
        assert np.allclose(out[:, k], exp, rtol=tol, atol=1e-6), k


def test_double_math_library():
    rng = np.random.default_rng(12)
    n = 128
    x = rng.uniform(-5, 5, n)
    y = rng.uniform(0.1, 9, n)
    dev = Device()
    px, py, po = dev.put(x), dev.put(y), dev.alloc(n * 8 * 8)
    dev.launch(MOD, "dmath", (1,), (128,), px, py, po, n)
    out = dev.get(po, n * 8, np.float64).reshape(n, 8)
    fns = [lambda a, b: math.exp(a), lambda a, b: math.log(b), lambda a, b: math.sin(a),
           lambda a, b: math.cos(a), lambda a, b: math.pow(b, a), math.atan2,
           lambda a, b: math.sqrt(b) / (a + 10.0), math.fmod]
    for k, f in enumerate(fns):
        exp = np.array([f(a, b) for a, b in zip(x, y, strict=True)])
        assert np.allclose(out[:, k], exp, rtol=1e-14, atol=1e-15), k
