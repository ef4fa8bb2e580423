"""sm_80's ``fma.rn.relu.f16[x2]`` (``__hfma_relu``; gdevd/gpu/ptx/relu16.py) on both engines:
the fused result, negatives to +0, NaN to the canonical 0x7FFF; and bf16x2 ``set``."""

from __future__ import annotations

import numpy as np

from .isa import run_snippet


def _inputs():
    a = np.array([1.5, -2, 0.5, np.inf, np.nan, -0.0, 3, -1, 2, 65504], np.float16)
    b = np.array([2, 3, -4, 0, 1, 1, -1, -1, 0.25, 2], np.float16)
    c = np.array([0.25, 1, 1, -np.inf, 0, 0, 2, 0, 0.5, 0], np.float16)
    return a, b, c


def _want(a, b, c) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):          # inf * 0, 65504 * 2
        r = (a.astype(np.float64) * b + c).astype(np.float16)   # exact product, one rounding
    bits = r.view(np.uint16).copy()
    bits[(r < 0)] = 0
    bits[np.isnan(r)] = 0x7FFF
    return bits


def test_fma_relu_f16(engine):
    a, b, c = _inputs()
    got = run_snippet("fma.rn.relu.f16 %y, %x0, %x1, %x2;",
                      [("f16", a), ("f16", b), ("f16", c)], "f16")
    assert got.view(np.uint16).tolist() == _want(a, b, c).tolist()


def test_fma_relu_f16x2_per_half(engine):
    a, b, c = _inputs()
    pack = lambda x, y: (x.view(np.uint16).astype(np.uint32) |  # noqa: E731
                         y.view(np.uint16).astype(np.uint32) << 16)
    got = run_snippet("fma.rn.relu.f16x2 %y, %x0, %x1, %x2;",
                      [("u32", pack(a, c)), ("u32", pack(b, b)), ("u32", pack(c, a))], "u32")
    assert (got & 0xFFFF).tolist() == _want(a, b, c).tolist()
    assert (got >> 16).tolist() == _want(c, b, a).tolist()


def test_set_bf16x2_is_one_or_zero_per_half(engine):
    x = np.array([0x3F80_4000, 0xBF80_3F80, 0x7FC0_0000], np.uint32)     # (2, 1) (1, -1) (0, nan)
    y = np.array([0x3F80_3F80, 0x3F80_3F80, 0x0000_0000], np.uint32)
    got = run_snippet("set.lt.bf16x2.bf16x2 %y, %x0, %x1;", [("u32", x), ("u32", y)], "u32")
    # lt per half (low, high): (2<1, 1<1), (1<1, -1<1), (0<0, nan<0)
    assert got.tolist() == [0x0000_0000, 0x3F80_0000, 0x0000_0000]
