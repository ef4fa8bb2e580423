"""The ``.approx`` functions as hardware-like, deterministic approximations (numpy side).

Theory of operation.  A GPU computes ``ex2.approx``, ``sin.approx``, ``rcp.approx`` ... in its
special function unit: fast, and *not* correctly rounded; the PTX ISA documents only error
bounds.  Programs meet that imprecision on real hardware, so both engines give it to them
too, and give the *same* bits (the interpreter is the reference for the compiled engine):

1. the function is evaluated in float64 with basic IEEE operations only (+, -, *, /, sqrt,
   rint, frexp, ldexp), in a fixed order, with polynomials accurate to ~2^-50; numpy and C
   (``jit/approx.h``, compiled with ``-ffp-contract=off``) perform the very same operations,
   so their float64 results are identical bit for bit (libm and numpy's own ``exp2``/``tanh``
   differ in the last bit, so neither is called);
2. the float64 value is rounded to nearest-even at ``bits`` significant bits
   (:func:`quantize`) -- the documented precision of the instruction -- and then converted
   to the destination type.

Precision (significant bits kept, and the resulting bound, next to the ISA's):

=============================  =========  ==========================================
instruction                    bits       error (ISA bound)
=============================  =========  ==========================================
ex2.approx.f32                 23         <= 1 ulp (2 ulp)
lg2.approx.f32                 23         <= 2^-23 relative (2^-22.6 absolute)
sin/cos.approx.f32             22         <= 2^-21.4 absolute on [-pi, pi] (2^-20.9);
                                          the angle is reduced as the hardware does,
                                          ``x * f32(1/2pi)`` rounded to f32, so large
                                          arguments lose precision as ``__sinf`` does
tanh.approx.f32                11         <= 2^-11 relative (2^-10.987)
rcp/sqrt/rsqrt.approx.f32      23         <= 1 ulp (rcp 1 ulp; sqrt 2^-23; rsqrt 2^-22.9)
div.approx.f32                 a*rcp(b)   <= 2 ulp for |b| in [2^-126, 2^126], 0 beyond
div.full.f32                   23         <= 1 ulp (2 ulp)
rcp.approx.ftz.f64             1.11.20    the ISA's procedure: the top 32 bits of a, a
                                          reciprocal kept to 20 fraction bits
rsqrt.approx.f64               23         <= 2^-23 relative
=============================  =========  ==========================================
"""

from __future__ import annotations

import numpy as np

LN2 = 0.6931471805599453
LOG2E = 1.4426950408889634
TWO_PI = 6.283185307179586
INV_2PI_F32 = float(np.float32(1 / TWO_PI))
SQRT_HALF = 0.7071067811865476
_FACT = [1.0]
for _k in range(1, 18):
    _FACT.append(_FACT[-1] * _k)
EXP_C = [1.0 / _FACT[k] for k in range(13)]          # e^y, |y| <= ln2 / 2
SIN_C = [(-1.0) ** k / _FACT[2 * k + 1] for k in range(8)]   # sin a, |a| <= pi / 4
COS_C = [(-1.0) ** k / _FACT[2 * k] for k in range(9)]       # cos a
ATANH_C = [1.0 / (2 * k + 1) for k in range(11)]     # atanh(s) / s in s^2, |s| <= 0.172


def _f64(x):
    return np.asarray(x).astype(np.float64)


def _horner(coef, x):
    """sum(coef[k] * x**k), highest degree first (the order C uses too)."""
    r = np.full_like(x, coef[-1])
    for c in reversed(coef[:-1]):
        r = r * x + c
    return r


def quantize(x, bits: int):
    """float64 ``x`` rounded to nearest-even at ``bits`` significant bits (finite values)."""
    x = _f64(x)
    u = x.view(np.uint64)
    s = np.uint64(53 - bits)
    half = np.uint64((1 << (53 - bits - 1)) - 1)
    odd = (u >> s) & np.uint64(1)
    r = ((u + half + odd) >> s) << s
    return np.where(np.isfinite(x), r.view(np.float64), x)


def exp2_core(x):
    """2**x of float64 ``x`` (|x| < 1100) with ~2^-52 relative error."""
    n = np.rint(x)
    y = (x - n) * LN2
    with np.errstate(over="ignore"):
        return np.ldexp(_horner(EXP_C, y), n.astype(np.int64).clip(-1100, 1100))


def ex2(x):
    """ex2.approx.f32 (see the table above)."""
    x = _f64(x)
    xc = np.clip(np.where(np.isnan(x), 0.0, x), -200.0, 200.0)
    r = quantize(exp2_core(xc), 23)
    return np.where(np.isnan(x), x, r).astype(np.float32)


def lg2(x):
    """lg2.approx.f32: log2 by frexp and atanh's series (see the table above)."""
    x = _f64(x)
    ok = np.isfinite(x) & (x > 0)
    m, e = np.frexp(np.where(ok, x, 1.0))
    low = m < SQRT_HALF
    m = np.where(low, m * 2.0, m)
    e = e - low
    s = (m - 1.0) / (m + 1.0)
    r = e + (2.0 * s * _horner(ATANH_C, s * s)) * LOG2E
    with np.errstate(invalid="ignore"):
        special = np.where(x == 0, -np.inf, np.where(x > 0, x, np.nan))
    return np.where(ok, quantize(r, 23), special).astype(np.float32)


def _turns(x):
    """The angle in quadrant q and a in [-pi/4, pi/4], reduced as the hardware does."""
    x = _f64(x)
    fin = np.isfinite(x)
    t = (np.where(fin, x, 0.0) * INV_2PI_F32).astype(np.float32).astype(np.float64)
    u = t - np.rint(t)
    q = np.rint(4.0 * u)
    a = (u - 0.25 * q) * TWO_PI
    return fin, q.astype(np.int64) & 3, a


def _sincos(x, shift: int):
    fin, q, a = _turns(x)
    a2 = a * a
    s = a * _horner(SIN_C, a2)
    c = _horner(COS_C, a2)
    q = (q + shift) & 3
    r = np.where(q == 0, s, np.where(q == 1, c, np.where(q == 2, -s, -c)))
    return np.where(fin, quantize(r, 22), np.nan).astype(np.float32)


def sin(x):
    """sin.approx.f32 (see the table above)."""
    return _sincos(x, 0)


def cos(x):
    """cos.approx.f32 (see the table above)."""
    return _sincos(x, 1)


def tanh(x):
    """tanh.approx.f32: (1 - e) / (1 + e), e = 2**(-2|x| log2 e); x - x^3/3 near 0."""
    x = _f64(x)
    ax = np.minimum(np.abs(np.where(np.isnan(x), 0.0, x)), 20.0)
    e = exp2_core(-2.0 * ax * LOG2E)
    big = (1.0 - e) / (1.0 + e)
    small = ax - ax * ax * ax / 3.0
    r = quantize(np.where(ax < 2.0 ** -10, small, big), 11)
    return np.where(np.isnan(x), x, np.copysign(r, x)).astype(np.float32)


def rcp(x):
    """rcp.approx.f32 (the .ftz variant wraps this with the flush)."""
    with np.errstate(divide="ignore"):
        return quantize(1.0 / _f64(x), 23).astype(np.float32)


def sqrt(x):
    """sqrt.approx.f32."""
    with np.errstate(invalid="ignore"):
        return quantize(np.sqrt(_f64(x)), 23).astype(np.float32)


def rsqrt(x):
    """rsqrt.approx.f32 and .f64 (type kept)."""
    x = np.asarray(x)
    with np.errstate(invalid="ignore", divide="ignore"):
        return quantize(1.0 / np.sqrt(_f64(x)), 23).astype(x.dtype)


def div_approx(a, b):
    """div.approx.f32: a * rcp(b), the reciprocal flushed below 2^-126 (so 0 or NaN)."""
    r = rcp(b)
    r = np.where(np.abs(r) < np.float32(2.0 ** -126), np.copysign(np.float32(0), r), r)
    return (np.asarray(a, np.float32) * r).astype(np.float32)


def div_full(a, b):
    """div.full.f32: the quotient kept to 23 significant bits."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return quantize(_f64(a) / _f64(b), 23).astype(np.float32)


def rcp_f64(x):
    """rcp.approx.ftz.f64 by the ISA's procedure (1.11.20 format in and out)."""
    x = _f64(x)
    top = (x.view(np.uint64) & np.uint64(0xFFFFFFFF00000000)).view(np.float64)
    top = np.where(np.abs(top) < 2.0 ** -1022, np.copysign(0.0, top), top)
    with np.errstate(divide="ignore", over="ignore"):
        r = quantize(1.0 / top, 21)
    return np.where(np.abs(r) < 2.0 ** -1022, np.copysign(0.0, r), r)
