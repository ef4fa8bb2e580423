"""bf16 arithmetic (gdevd/gpu/ptx/bf16arith.py) as nvcc emits it at sm_80 and sm_90, on both
engines, against a reference that rounds each exact result once to nearest even."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from .helpers import Device, load

N = 256


def _bits(v: float) -> int:
    """bf16 bits of ``v`` rounded to nearest even (v finite, normal range)."""
    if v == 0:
        return 0x8000 if np.signbit(v) else 0
    f = Fraction(v)
    sign, f = (0x8000, -f) if f < 0 else (0, f)
    e = 0
    while f >= 2:
        f /= 2
        e += 1
    while f < 1:
        f *= 2
        e -= 1
    q = f * 128                          # 8 significant bits: 1.xxxxxxx
    n, rem = divmod(q.numerator, q.denominator)
    if 2 * rem > q.denominator or (2 * rem == q.denominator and n & 1):
        n += 1
    if n == 256:
        n, e = 128, e + 1
    return sign | (e + 127) << 7 | (n - 128)


def _value(bits: int) -> float:
    return float(np.array([bits << 16], np.uint32).view(np.float32)[0])


def _inputs():
    rng = np.random.default_rng(5)
    exp = rng.integers(127 - 20, 127 + 20, 2 * N)
    man = rng.integers(0, 128, 2 * N)
    sign = rng.integers(0, 2, 2 * N) << 15
    bits = (sign | exp << 7 | man).astype(np.uint16)
    bits[:8] = [0, 0x8000, 0x3F80, 0xBF80, 0x7F80, 0x7FC0, 0x4000, 0x3F80]   # 0 -0 1 -1 inf nan
    bits[N:N + 8] = [0x8000, 0, 0x3F80, 0x3F80, 0x3F80, 0x3F80, 0x7FC0, 0xBF80]
    return bits[:N], bits[N:]


@pytest.mark.parametrize("name", ["bf16ops", "bf16ops.sm90"])
def test_bf16_operators_round_once(engine, name):
    dev, mod = Device(), load(name)
    a, b = _inputs()
    v = np.concatenate([a, b, b, a]).view(np.uint32)   # 2N halves: v[i], v[N + i] (x2 pairs)
    pa, pb, pv = dev.put(a), dev.put(b), dev.put(v)
    out, flags, w = dev.alloc(2 * 7 * N), dev.alloc(4 * N), dev.alloc(4 * 3 * N)
    dev.launch(mod, "bf16ops", (N // 64,), (64,), pa, pb, out, flags, pv, w, N)
    got = dev.get(out, 7 * N, np.uint16).reshape(7, N)
    fl = dev.get(flags, N, np.int32)
    for i in range(8, N):                 # finite, normal, no overflow: exact reference
        x, y = _value(int(a[i])), _value(int(b[i]))
        assert got[0, i] == _bits(x + y) and got[1, i] == _bits(x - y), i
        assert got[2, i] == _bits(x * y), i
        if x != y:                        # (max/min of +0 and -0: the f32 instruction's)
            assert got[3, i] == (a[i] if x > y else b[i])
            assert got[4, i] == (a[i] if x < y else b[i])
        assert got[5, i] == a[i] ^ 0x8000 and got[6, i] == b[i] & 0x7FFF
        assert fl[i] == (x < y) | (x == y) << 1 | (x >= y) << 2
    assert got[3, 5] == b[5] and got[4, 5] == b[5]           # max/min(NaN, 1) = 1
    assert got[0, 0] == 0 and got[2, 1] == 0x8000             # 0 + -0 = 0, -0 * 0 = -0
    assert fl[5] == 1 << 3 and fl[0] == 1 << 1 | 1 << 2       # NaN; 0 == -0
    ww = dev.get(w, 3 * 2 * N, np.uint16).reshape(3, 2 * N)
    halves = v.view(np.uint16)
    for k in (k for k in range(2 * N) if k % N >= 8):     # finite pairs
        hx, hy = int(halves[k]), int(halves[2 * N + k])
        x, y = _value(hx), _value(hy)
        assert ww[0, k] == _bits(_value(_bits(x * y)) + x), k     # __hmul2 then __hadd2
        if x != y:
            assert ww[1, k] == (hx if x > y else hy) and ww[2, k] == (hx if x < y else hy), k
