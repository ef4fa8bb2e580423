"""tests/programs/cuda/mathlib.cu on both engines: the CUDA math library's float and
double functions (nvcc inlines them as long PTX sequences: range reductions, polynomial
evaluations, local-memory tables for large arguments), against Python's ``math``.

The engines must agree bit for bit.  Against float64 references, each single-function
result is held to the maximum ulp error the CUDA C Programming Guide documents for that
function (plus one for the reference's own rounding); sums of several functions to a
relative 1e-5 (float) or 1e-13 (double) of the sum of their magnitudes.  With
``-use_fast_math`` the float functions become the hardware approximations (``__sinf``,
``__expf``...), whose documented errors are absolute or grow with the argument, so that
variant is held to engine agreement and a loose 2e-3 relative bound."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

from .runner import params, run_both, ulps

ALL = params("mathlib")
N = 192
_R = np.random.default_rng(11)
X = np.concatenate([_R.uniform(-10, 10, N - 8), [1e-3, -3.0, 100.5, -1234.5, 0.5, 7.0, 40, 1]])
Y = np.concatenate([_R.uniform(-40, 40, N - 8), [2.5, -0.5, 3, 1, 10, -7, 0.25, 33]])
X32, Y32 = X.astype(np.float32), Y.astype(np.float32)

# (output column, documented ulp bound, reference from (a, b) float64)
F32 = [(0, 2, lambda a, b: math.sin(a)), (1, 2, lambda a, b: math.cos(a)),
       (2, 4, lambda a, b: math.tan(a)), (3, 2, lambda a, b: math.exp(b)),
       (4, 2, lambda a, b: 2.0 ** b), (6, 1, None), (7, 1, lambda a, b: math.log(abs(a))),
       (8, 1, lambda a, b: math.log2(abs(a))), (9, 2, lambda a, b: math.log10(abs(a))),
       (10, 1, lambda a, b: math.log1p(abs(b))), (12, 3, lambda a, b: math.atan2(a, b))]
SUMS32 = [(15, lambda a, b, x: [math.sinh(x), math.cosh(x), math.tanh(x)]),
          (16, lambda a, b, x: [math.erf(x), math.erfc(x)])]


def _host(kernel: str, x, y, cols: int, dtype, iout: bool):
    def host(gpu, mod):
        px, py, po = gpu.put(x), gpu.put(y), gpu.alloc(N * cols * dtype().itemsize)
        args = [px, py, po] + ([gpu.alloc(N * 8)] if iout else []) + [N]
        gpu.run(kernel, ((N + 63) // 64,), (64,), *args)
        out = {"out": gpu.get(po, N * cols, dtype).reshape(N, cols)}
        if iout:
            out["iout"] = gpu.get(args[3], 2 * N, np.int32).reshape(N, 2)
        return out
    return host


@pytest.mark.parametrize("variant", ALL)
def test_float_functions(variant):
    ref, got = run_both(variant, _host("math_f32", X32, Y32, 24, np.float32, True))
    o = got["out"]
    a64, b64 = X32.astype(np.float64), Y32.astype(np.float64)
    fast = variant.endswith("fast")
    for col, bound, fn in F32:
        b_arg = (Y32 * np.float32(0.01)).astype(np.float64)
        want = np.array([math.expm1(b) for b in b_arg]) if col == 6 else \
            np.array([fn(a, b) for a, b in zip(a64, b64, strict=True)])
        if fast:
            assert np.allclose(o[:, col], want, rtol=2e-3, atol=2e-3), col
        else:
            assert ulps(o[:, col], want).max() <= bound + 1, (col, ulps(o[:, col], want).max())
    for col, fn in SUMS32:
        x = (Y32 * np.float32(0.1)).astype(np.float64)
        terms = np.array([fn(a, b, t) for a, b, t in zip(a64, b64, x, strict=True)])
        mag = np.abs(terms).sum(1)
        assert np.all(np.abs(o[:, col] - terms.sum(1)) <= (2e-3 if fast else 1e-5) * mag), col
    e = np.array([math.frexp(a)[1] for a in a64])
    if not fast:
        assert np.array_equal(o[:, 21], (np.array([math.frexp(a)[0] for a in a64]) +
                                         np.ldexp(b64, np.fmod(e, 7).astype(int))
                                         ).astype(np.float32))
        p = np.abs(Y32 / np.float32(41)) + np.float32(0.001)
        inv = [NormalDist().inv_cdf(float(q)) for q in p.astype(np.float64)]
        erfinv = [_erfinv(float(v)) for v in (Y32 / np.float32(41)).astype(np.float64)]
        assert np.allclose(o[:, 22], np.add(inv, erfinv), rtol=1e-5, atol=1e-5)
    ints = (e + np.rint(b64) + np.round(a64 + np.copysign(1e-9, a64)).astype(int) +
            np.floor(np.log2(np.abs(a64)))).astype(np.int32)
    assert np.array_equal(got["iout"][:, 0], ints)


def _erfinv(y: float) -> float:
    """erf's inverse by bisection in float64 (the reference for erfinvf)."""
    lo, hi = -6.0, 6.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if math.erf(mid) < y else (lo, mid)
    return (lo + hi) / 2


F64 = [(0, 2, lambda a, b: math.sin(a)), (1, 2, lambda a, b: math.cos(a)),
       (2, 2, lambda a, b: math.tan(a)), (3, 1, lambda a, b: math.exp(b)),
       (4, 1, lambda a, b: math.log(abs(a))), (5, 1, lambda a, b: math.log1p(abs(b))),
       (6, 2, lambda a, b: abs(a) ** (b * 0.1)), (7, 2, lambda a, b: math.atan2(a, b)),
       (15, 1, lambda a, b: a / b + 1.0 / a)]


@pytest.mark.parametrize("variant", ALL)
def test_double_functions(variant):
    ref, got = run_both(variant, _host("math_f64", X, Y, 16, np.float64, False))
    o = got["out"]
    for col, bound, fn in F64:
        want = np.array([fn(a, b) for a, b in zip(X, Y, strict=True)])
        assert ulps(o[:, col], want).max() <= bound + 1, (col, ulps(o[:, col], want).max())
    terms = np.array([[math.erf(b * 0.1), math.erfc(b * 0.1), math.sinh(b * 0.1),
                       math.cosh(b * 0.1), math.tanh(b * 0.1)] for b in Y])
    assert np.all(np.abs(o[:, 9] + o[:, 10] - terms.sum(1)) <= 1e-13 * np.abs(terms).sum(1))
    # CPython's lgamma (a Lanczos sum) is itself off by ~1e-16 absolute near its zeros
    lg = np.array([math.lgamma(abs(b) + 0.5) for b in Y])
    assert np.allclose(o[:, 12], lg, rtol=4e-16 * 5, atol=1e-15)
    hyp = np.fmod(X, Y) + np.hypot(X, Y)
    assert np.allclose(o[:, 13], hyp, rtol=1e-13, atol=1e-13)
