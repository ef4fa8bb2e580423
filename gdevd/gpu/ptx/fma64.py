"""``fma.f64``: ``a * b + c`` rounded once, over numpy arrays (numpy has no fma).

Theory of operation.  The product is split exactly into ``ph + pl`` (Dekker's product with
Veltkamp's splitting), ``c + ph`` exactly into ``th + tl`` (TwoSum), ``tl + pl`` is rounded
to odd, and the final ``th + v`` rounded to nearest is the correctly rounded ``a*b + c``
(Boldo and Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using
rounding to odd", IEEE TC 57(4), 2008).  The splitting needs |a|, |b| < 2^995 and the error
terms must stay normal, so lanes near the ends of the exponent range, and every lane of a
directed rounding mode, are computed exactly with rationals (``float(Fraction)`` rounds
correctly) -- rare in real kernels.  Lanes with an infinite or NaN operand compute
``a * b + c``, whose IEEE special values (and NaN bits) are those of the C engine's
``fma`` there.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

_SPLIT = 134217729.0          # 2^27 + 1
_SAFE_HI, _SAFE_LO = 2.0 ** 995, 2.0 ** -900


def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(a):
    t = _SPLIT * a
    hi = t - (t - a)
    return hi, a - hi


def _round_odd(s, e):
    """s + e (s = RN(s + e)) rounded to odd: towards zero, last bit set when inexact."""
    inexact = e != 0
    t = np.where(inexact & (np.sign(e) != np.sign(s)), np.nextafter(s, 0), s)
    bits = np.asarray(t, np.float64).view(np.uint64) | inexact.astype(np.uint64)
    return bits.view(np.float64)


def _emulated(a, b, c):
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    pl = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    th, tl = _two_sum(c, p)
    v = _round_odd(*_two_sum(tl, pl))
    return th + v, p, th


def _exact_one(a: float, b: float, c: float, mode: str) -> float:
    """One lane, exactly: RN via float(Fraction), directed modes by one step if needed."""
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:   # IEEE: zeros of one sign keep it; otherwise +0 (-0 rounding down)
        sp = (math.copysign(1, a) < 0) != (math.copysign(1, b) < 0)
        sc = math.copysign(1, c) < 0
        both_zero = (a == 0 or b == 0) and c == 0
        neg = sp if both_zero and sp == sc else mode == "rm"
        return -0.0 if neg else 0.0
    try:
        z = float(exact)
    except OverflowError:
        z = math.inf if exact > 0 else -math.inf
    if mode == "rn":
        return z
    if math.isinf(z):   # overflow: the largest finite value unless rounding outwards
        outwards = (mode == "rp") == (exact > 0) and mode != "rz"
        return z if outwards else math.copysign(1.7976931348623157e308, z)
    fz = Fraction(z)
    if mode == "rz" and abs(fz) > abs(exact):
        return math.nextafter(z, 0.0)
    if mode == "rm" and fz > exact:
        return math.nextafter(z, -math.inf)
    if mode == "rp" and fz < exact:
        return math.nextafter(z, math.inf)
    return z


def fma_f64(a, b, c, mode: str = "rn"):
    """Single-rounded ``a * b + c`` of float64 arrays in PTX rounding ``mode``."""
    arrays = np.broadcast_arrays(*(np.asarray(x, np.float64) for x in (a, b, c)))
    shape = arrays[0].shape
    a, b, c = (np.array(x).reshape(-1) for x in arrays)
    with np.errstate(all="ignore"):
        z, p, th = _emulated(a, b, c)
        plain = a * b + c
    # an exact zero product: a*b + c rounds once (and keeps IEEE's sign of a zero sum);
    # an infinite c with finite a, b: c, whatever a*b overflowed to
    z = np.where((a == 0) | (b == 0), plain, z)
    plain = np.where(np.isinf(c) & np.isfinite(a) & np.isfinite(b), c, plain)
    finite = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
    mag = np.maximum(np.abs(a), np.abs(b))
    tiny = lambda x: (x != 0) & (np.abs(x) < _SAFE_LO)  # noqa: E731
    small_p = (a != 0) & (b != 0) & (np.abs(p) < _SAFE_LO)
    risky = finite & ((mag >= _SAFE_HI) | (np.abs(c) >= _SAFE_HI) | small_p | tiny(th) |
                      ~np.isfinite(p) | ~np.isfinite(z))
    if mode != "rn":
        risky = finite
    out = np.where(finite, z, plain)
    for k in np.flatnonzero(risky):
        out[k] = _exact_one(float(a[k]), float(b[k]), float(c[k]), mode)
    return out.reshape(shape)
