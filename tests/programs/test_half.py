"""tests/programs/cuda/half.cu on both engines: __half2 axpby (hfma2/hmul2/hadd2/hsub2),
a half2 dot product reduced in float, and scalar half operations with comparisons
(set.*.f16x2 on sm_75, cvt.rn.f16x2.f32 on sm_80), against numpy's float16.

Each half operation rounds once to f16, so the references compute in float64 and round
to float16 at the same points; they must be exact (hdiv goes through rcp.approx: 1 ulp)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from .runner import params, run_both

ALL = params("half")
H = np.float16


def _r(x) -> np.ndarray:
    """float64 values rounded once to float16."""
    with np.errstate(over="ignore"):
        return np.asarray(x, np.float64).astype(H)


@pytest.mark.parametrize("variant", ALL)
def test_half2_axpby(variant):
    n2 = 300
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(2 * n2) * 4).astype(H)
    y = (rng.standard_normal(2 * n2) * 4).astype(H)
    alpha, beta = 1.5, -0.75

    def host(gpu, mod):
        px, py, po = gpu.put(x), gpu.put(y), gpu.alloc(4 * n2)
        gpu.run("half2_axpby", ((n2 + 127) // 128,), (128,), px, py, po, alpha, beta, n2)
        return {"out": gpu.get(po, 2 * n2, H)}
    ref, got = run_both(variant, host)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    r = _r(alpha * x64 + _r(beta * y64).astype(np.float64))
    want = _r(r.astype(np.float64) + _r(x64 - y64).astype(np.float64))
    assert np.array_equal(got["out"], want)


@pytest.mark.parametrize("variant", ALL)
def test_half2_dot(variant):
    n2, block = 600, 256
    rng = np.random.default_rng(2)
    x, y = rng.random(2 * n2).astype(H), rng.random(2 * n2).astype(H)
    blocks = (n2 + block - 1) // block

    def host(gpu, mod):
        px, py, pp = gpu.put(x), gpu.put(y), gpu.alloc(4 * blocks)
        gpu.run("half2_dot", (blocks,), (block,), px, py, pp, n2)
        return {"part": gpu.get(pp, blocks, np.float32)}
    ref, got = run_both(variant, host)
    prod = _r(x.astype(np.float64) * y).astype(np.float64)
    assert abs(got["part"].astype(np.float64).sum() - prod.sum()) <= 2 * n2 * 2.0 ** -23 * \
        prod.sum()


@pytest.mark.parametrize("variant", ALL)
def test_half_scalar_ops_and_comparisons(variant):
    n = 256
    rng = np.random.default_rng(3)
    a = (rng.standard_normal(n) * 8).astype(H)
    b = (rng.standard_normal(n) * 8).astype(H)
    a[:4], b[:4] = [np.nan, 1, -2, 3], [1, np.nan, -2, 65504]
    b[4:8] = a[4:8]

    def host(gpu, mod):
        pa, pb, po, pf = gpu.put(a), gpu.put(b), gpu.alloc(12 * n), gpu.alloc(4 * n)
        gpu.run("half_ops", ((n + 63) // 64,), (64,), pa, pb, po, pf, n)
        return {"out": gpu.get(po, 6 * n, H).reshape(n, 6), "flags": gpu.get(pf, n, np.uint32)}
    ref, got = run_both(variant, host)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    out, flags = got["out"], got["flags"]
    with np.errstate(invalid="ignore"):
        mx, mn = np.fmax(a64, b64), np.fmin(a64, b64)
        assert np.array_equal(out[:, 0], _r(mx + mn), equal_nan=True)
        assert np.array_equal(out[:, 1], _r(a64 * b64), equal_nan=True)
        assert np.array_equal(out[:, 3], _r(np.sqrt(np.abs(a64))), equal_nan=True)
        assert np.array_equal(out[:, 4], _rz(a64 * 3), equal_nan=True)
        fma = _r(a64 * b64 + np.arange(n))
        assert np.array_equal(out[:, 5], -fma, equal_nan=True)
        div = _r(a64 / (np.abs(b64) + 1))
        ok = (np.abs(out[:, 2].astype(np.float64) - div) <= np.spacing(np.abs(div))) | \
            (np.isnan(div) & np.isnan(out[:, 2]))
        assert ok.all()
        lt, ge = a64 < b64, a64 >= b64
        both_gt = (a64 > b64) & (b64 > a64)      # __hbgt2(p, q): both halves of (a,b)>(b,a)
        toint = np.where(np.isnan(a64), 0, np.trunc(a64)).astype(np.int64) & 0xFFFFFF
    want = lt | ge << 1 | both_gt << 2 | np.isnan(a64) << 3 | toint << 8
    assert np.array_equal(flags, want.astype(np.uint32))


def _rz(x: np.ndarray) -> np.ndarray:
    """float64 values rounded toward zero to float16."""
    r = x.astype(H)
    over = np.abs(r.astype(np.float64)) > np.abs(x)
    step = np.nextafter(r, H(0))
    return np.where(over, step, r).astype(H)


def _bf16_bits(v: np.ndarray) -> np.ndarray:
    """float64 values rounded to nearest even bf16 (8 significant bits), as bit patterns:
    an independent model (frexp and Python's half-even round) for normal values."""
    out = []
    for x in v.tolist():
        m, e = math.frexp(x)
        r = math.ldexp(round(m * 256), e - 8)
        out.append(int(np.float32(r).view(np.uint32)) >> 16)
    return np.array(out, np.uint16)


def _bf16_values(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


@pytest.mark.parametrize("variant", ALL)
def test_bfloat16_fma_and_conversions(variant):
    n = 256
    rng = np.random.default_rng(4)
    a = _bf16_bits(rng.standard_normal(n) * 4)
    b = _bf16_bits(rng.standard_normal(2 * n) * 4)

    def host(gpu, mod):
        pa, pb = gpu.put(a), gpu.put(b)
        po, po2, pf = gpu.alloc(2 * n), gpu.alloc(4 * n), gpu.alloc(4 * n)
        gpu.run("bf16_ops", ((n + 63) // 64,), (64,), pa, pb, po, po2, pf, n)
        return {"o": gpu.get(po, n, np.uint16), "o2": gpu.get(po2, 2 * n, np.uint16),
                "f": gpu.get(pf, n, np.float32)}
    ref, got = run_both(variant, host)
    x, y = _bf16_values(a), _bf16_values(b)
    lo, hi = y[0::2], y[1::2]
    if variant.endswith("sm80"):       # fma: rounded once from the exact value
        assert np.array_equal(got["o"], _bf16_bits(x * x + 1.5))
        assert np.array_equal(got["o2"][0::2], _bf16_bits(lo * lo + 0.5))
        assert np.array_equal(got["o2"][1::2], _bf16_bits(hi * hi - 2.0))
    else:                              # through f32: within one bf16 ulp of the exact value
        for bits, want in ((got["o"], x * x + 1.5), (got["o2"][0::2], lo * lo + 0.5),
                           (got["o2"][1::2], hi * hi - 2.0)):
            assert np.all(np.abs(_bf16_values(bits) - want) <= np.abs(want) * 2.0 ** -8)
    f = (x.astype(np.float32) + (lo * hi).astype(np.float32)).astype(np.float32)
    assert np.array_equal(got["f"], f)
