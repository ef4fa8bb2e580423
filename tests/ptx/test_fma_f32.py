"""fma.rn.f32 on the interpreter is C's fmaf bit for bit, on the inputs where converting the
float64 sum to float32 would round twice (exact float32 midpoints, subnormal results) and on
ordinary ones, where the interpreter takes the one-conversion path."""

from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np
import pytest

from gdevd.gpu.ptx.ops_float import fma_f32

_libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
_libm.fmaf.restype = ctypes.c_float
_libm.fmaf.argtypes = [ctypes.c_float] * 3


def _reference(a, b, c) -> np.ndarray:
    return np.array([_libm.fmaf(float(x), float(y), float(z))
                     for x, y, z in zip(a, b, c, strict=True)], np.float32)


def _cases(kind: str, rng: np.random.Generator, n: int):
    f32 = np.float32
    if kind == "ordinary":
        return (rng.standard_normal(n).astype(f32), rng.standard_normal(n).astype(f32),
                rng.standard_normal(n).astype(f32))
    if kind == "midpoints":
        # (1 + 2^-23) - 2^-24 (1 - 2^-46) = 1 + 2^-24 + 2^-70: float64 rounds it onto the
        # float32 midpoint 1 + 2^-24, whose tie goes to 1.0; once rounded it is 1 + 2^-23.
        # Scaled by powers of two and mixed with neighbours of the product.
        k = rng.integers(-3, 4, n)
        scale = (2.0 ** rng.integers(-20, 20, n)).astype(f32)
        a = (-(2.0 ** -12) * (1 - 2.0 ** -23) * scale).astype(f32)
        b = (2.0 ** -12 * (1 + (2 * (k == 0) - 1 + k * (k != 0)) * 2.0 ** -23)).astype(f32)
        return a, b, ((1 + 2.0 ** -23) * scale).astype(f32)
    if kind == "near-ties":      # 2^-24-ish products on 1.0: sums at and around a midpoint
        b = (2.0 ** -12 * (1 + rng.integers(-3, 4, n) * 2.0 ** -23)).astype(f32)
        return np.full(n, f32(2 ** -12)), b, np.ones(n, f32)
    tiny = (rng.standard_normal(n) * 2.0 ** -130).astype(f32)      # subnormal results
    return tiny, np.full(n, f32(0.5)), tiny


@pytest.mark.parametrize("kind", ["ordinary", "midpoints", "near-ties", "subnormal"])
def test_fma_rn_f32_is_fmaf(kind: str) -> None:
    a, b, c = _cases(kind, np.random.default_rng(7), 4000)
    got, want = fma_f32(a, b, c), _reference(a, b, c)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
