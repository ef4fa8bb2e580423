"""Directed rounding (``.rz``/``.rm``/``.rp``) that a float64 result converted in the mode
cannot give: the f64 operations and integer-to-float conversions, over numpy arrays (f32
add/sub are ``ops_float.fma_f32(a, 1, b)``: a float64 sum of two floats can be inexact).

Theory of operation.  add/sub/mul are single-rounded fmas (``fma64.fma_f64`` rounds exactly
in every mode).  div, rcp and sqrt take the round-to-nearest result ``q`` and find, in exact
rationals, on which side of ``q`` the true value lies (``a/b - q``, ``x - q*q``); one step
towards it or none gives the directed result (a remainder computed in floats would lose its
sign where operands or results are subnormal).  A
finite quotient past the largest double rounds to that largest value unless the mode rounds
outwards.  Integer conversions compare the nearest float with the integer exactly.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .fma64 import fma_f64

_MAX64 = np.finfo(np.float64).max


def add_f64(a, b, mode: str) -> np.ndarray:
    """``a + b`` of float64 values rounded once in ``mode``."""
    return fma_f64(a, 1.0, b, mode)


def mul_f64(a, b, mode: str) -> np.ndarray:
    """``a * b`` of float64 values rounded once in ``mode`` (an exact zero keeps its sign)."""
    a, b = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64))
    with np.errstate(all="ignore"):
        plain = a * b
    zero = (a == 0) | (b == 0)
    return np.where(zero, plain, fma_f64(a, b, 0.0, mode))


def _step(q, side, mode: str) -> np.ndarray:
    """``q`` (the nearest value) moved to the ``mode`` rounding of a true value on ``side``
    of it (-1 below, +1 above, 0 exact)."""
    if mode == "rz":
        move = (side != 0) & ((side < 0) != (q < 0)) & (q != 0)
        target = np.zeros_like(q)
    elif mode == "rm":
        move, target = side < 0, np.full_like(q, -np.inf)
    else:
        move, target = side > 0, np.full_like(q, np.inf)
    return np.where(move, np.nextafter(q, target), q)


def _overflowed(q, ok, mode: str) -> np.ndarray:
    """A finite true value that rounded to an infinity: the largest double unless ``mode``
    rounds outwards (rp for positive, rm for negative)."""
    over = ok & np.isinf(q)
    outward = (q > 0) if mode == "rp" else (q < 0) if mode == "rm" else np.zeros_like(over)
    return np.where(over & ~outward, np.copysign(_MAX64, q), q)


def _sides(fin, diff) -> np.ndarray:
    """-1/0/+1 per lane: the sign of ``diff(k)`` (an exact Fraction: the true value less
    the nearest one, or a quantity of that sign) for the lanes of ``fin``; 0 elsewhere."""
    side = np.zeros(fin.shape, np.int8)
    for k in np.flatnonzero(fin):
        d = diff(k)
        side[k] = (d > 0) - (d < 0)
    return side


def _f(v) -> Fraction:
    return Fraction(float(v))


def div_f64(a, b, mode: str) -> np.ndarray:
    """``a / b`` of float64 values rounded once in ``mode`` (the side of the nearest value
    found exactly, so subnormal operands and quotients round right too)."""
    a, b = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64))
    shape = a.shape
    a, b = a.reshape(-1), b.reshape(-1)
    with np.errstate(all="ignore"):
        q = a / b
    ok = np.isfinite(a) & np.isfinite(b) & (b != 0) & (a != 0)
    fin = ok & np.isfinite(q)
    side = _sides(fin, lambda k: _f(a[k]) / _f(b[k]) - _f(q[k]))
    return _overflowed(_step(q, side, mode), ok, mode).reshape(shape)


def sqrt_f64(x, mode: str) -> np.ndarray:
    """sqrt of float64 values rounded once in ``mode``."""
    x = np.asarray(x, np.float64)
    shape = x.shape
    x = x.reshape(-1)
    with np.errstate(all="ignore"):
        s = np.sqrt(x)
    fin = np.isfinite(s) & (s > 0)
    side = _sides(fin, lambda k: _f(x[k]) - _f(s[k]) ** 2)   # sqrt(x) > s iff x > s*s
    return _step(s, side, mode).reshape(shape)


def int_to_float(x, dt, mode: str) -> np.ndarray:
    """Integers ``x`` converted to float type ``dt`` rounded in ``mode`` (exactly)."""
    x = np.asarray(x)
    r = x.astype(dt)
    if mode == "rn" or not x.size:
        return r
    xs, near = x.reshape(-1), r.reshape(-1).astype(np.float64)
    side = _sides(np.isfinite(near), lambda k: int(xs[k]) - int(near[k]))
    return _step(r, side.reshape(x.shape), mode).astype(dt)
