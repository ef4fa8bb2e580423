"""Floating-point arithmetic: add/sub/mul/fma/mad/div with rounding modes, .ftz and .sat,
rcp/sqrt/rsqrt/ex2/lg2/sin/cos/tanh, abs/neg/min/max, copysign, testp.

f32 results are computed in float32 (round-to-nearest) or, for directed rounding, in float64
and rounded once to float32; ``fma.rn.f32`` is single-rounded (round-to-odd,
:func:`fma_f32`), ``fma.f64`` too (:mod:`.fma64`).  ``.approx`` and ``div.full`` give the
hardware-like precision of :mod:`.approx`, bit for bit as the compiled engine does.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import approx, directed
from .bf16 import dec_fma_bf16
from .decode import Ins, binary, op, ternary, unary
from .fma64 import fma_f64
from .ptxtypes import DTYPES

F32_MIN_NORMAL = np.float32(1.1754944e-38)
_ROUND = {"rn", "rz", "rm", "rp"}


def ftz(x):
    """Flush float32 subnormals to sign-preserving zero."""
    x = np.asarray(x)
    return np.where(np.abs(x) < F32_MIN_NORMAL, np.copysign(np.float32(0), x), x).astype(x.dtype)


def round_to(x64, dt, mode: str):
    """Round float64 values ``x64`` to ``dt`` with PTX rounding ``mode``."""
    r = np.asarray(x64).astype(dt)
    if mode == "rn" or dt == np.float64:
        return r
    back = r.astype(np.float64)
    if mode == "rz":
        fix = np.abs(back) > np.abs(x64)
        toward = np.zeros_like(r)
    elif mode == "rm":
        fix = back > x64
        toward = np.full_like(r, -np.inf)
    else:
        fix = back < x64
        toward = np.full_like(r, np.inf)
    return np.where(fix, np.nextafter(r, toward), r).astype(dt)


_F32_TINY = np.float64(2.0 ** -126)


def _midpoint_or_tiny(s) -> bool:
    """Whether some float64 sum in ``s`` lies exactly halfway between two float32 values
    (its low 29 mantissa bits are 1 followed by zeros) or in float32's subnormal range.

    Rounding the exact ``a * b + c`` to float64 and then to float32 can differ from rounding
    it once only there: 53 >= 2 * 24 + 2 bits, so the float64 rounding never crosses a
    float32 midpoint, it can only land on one.  Elsewhere the plain conversion is exact-once.
    """
    bits = np.asarray(s, np.float64).view(np.uint64)
    if ((bits & np.uint64(0x1FFFFFFF)) == np.uint64(0x10000000)).any():
        return True
    mag = np.abs(s)
    return bool(((mag < _F32_TINY) & (mag != 0)).any())


def fma_f32(a, b, c, mode: str = "rn"):
    """``a * b + c`` of float32 values rounded once (as ``fmaf``) in PTX rounding ``mode``.

    The product is exact in float64.  In round-to-nearest, the float64 sum converted to
    float32 is already the once-rounded result unless it is a float32 midpoint or tiny
    (:func:`_midpoint_or_tiny`); otherwise the float64 sum ``s`` and its error ``e`` (TwoSum) give
    the exact value, which is rounded to odd in float64 (towards zero, lowest bit set when
    inexact) so that the final rounding to float32, in any mode, is the correct one
    (Boldo-Melquiond).
    """
    p = np.multiply(a, b, dtype=np.float64)
    c64 = np.asarray(c, np.float64)
    s = p + c64
    if mode == "rn" and not _midpoint_or_tiny(s):
        return s.astype(np.float32)
    bb = s - p
    e = (p - (s - bb)) + (c64 - bb)
    inexact = (e != 0) & np.isfinite(s)
    t = np.where(inexact & (np.sign(e) != np.sign(s)), np.nextafter(s, 0), s)
    bits = np.asarray(t, np.float64).view(np.uint64) | inexact.astype(np.uint64)
    odd = bits.view(np.float64)
    if mode == "rn":
        return odd.astype(np.float32)
    r = round_to(odd, np.float32, mode)
    if mode == "rm":   # IEEE: an exact zero sum of terms not both +0 is -0 rounding down
        pos0 = (p == 0) & (c64 == 0) & ~np.signbit(p) & ~np.signbit(c64)
        r = np.where((s == 0) & (e == 0) & ~pos0, np.float32(-0.0), r).astype(np.float32)
    return r


def saturate(x):
    """Clamp to [+0.0, 1.0]; NaN and -0.0 give +0.0 (as the hardware does)."""
    x = np.asarray(x)
    return np.where(np.isnan(x) | (x <= 0), x.dtype.type(0), np.minimum(x, 1)).astype(x.dtype)


def _post(ins: Ins, fn, t: str):
    """Wrap ``fn`` with the instruction's .ftz (inputs and output) and .sat."""
    f = fn
    if "ftz" in ins.flags and t == "f32":
        inner = f
        f = lambda *xs: ftz(inner(*map(ftz, xs)))  # noqa: E731
    if "sat" in ins.flags:
        inner2 = f
        f = lambda *xs: saturate(inner2(*xs))  # noqa: E731
    return f


def _halves(x):
    u = np.asarray(x).astype(np.uint32)
    lo = (u & np.uint32(0xFFFF)).astype(np.uint16).view(np.float16)
    hi = (u >> np.uint32(16)).astype(np.uint16).view(np.float16)
    return lo, hi


def paired(fn):
    """Lift a float16 function to packed ``.f16x2`` operands (two halves in a b32)."""
    def g(*xs):
        parts = [_halves(x) for x in xs]
        lo = np.asarray(fn(*(p[0] for p in parts))).astype(np.float16)
        hi = np.asarray(fn(*(p[1] for p in parts))).astype(np.float16)
        return lo.view(np.uint16).astype(np.uint32) | \
            (hi.view(np.uint16).astype(np.uint32) << np.uint32(16))
    return g


def _lift(fn, t: str):
    return paired(fn) if t == "f16x2" else fn


def _rmode(ins: Ins) -> str:
    r = ins.flags & _ROUND
    return next(iter(r)) if r else "rn"


_BIN = {"add": np.add, "sub": np.subtract, "mul": np.multiply}


def dec_arith(ins: Ins):
    """add/sub/mul of f16/f32/f64."""
    t = ins.type()
    ins.nargs(3)
    ins.only(_ROUND | {"ftz", "sat"})
    base = _BIN[ins.base]
    mode = _rmode(ins)
    dt = DTYPES[t]
    if t == "f16x2":
        return binary(ins, paired(_post(ins, base, "f16")), t)
    if mode == "rn":
        return binary(ins, _post(ins, base, t), t)
    sign = -1 if ins.base == "sub" else 1
    if t == "f64":
        fn = directed.mul_f64 if ins.base == "mul" else \
            (lambda a, b, m: directed.add_f64(a, sign * np.asarray(b), m))
        return binary(ins, _post(ins, lambda a, b: fn(a, b, mode), t), t)
    if t == "f32" and ins.base != "mul":   # the float64 sum may be inexact: round it once
        return binary(ins, _post(ins, lambda a, b: fma_f32(a, np.float32(1), sign * b, mode), t), t)
    # an f32 product and f16 sums and products are exact in float64
    exact = lambda a, b: round_to(base(np.asarray(a, np.float64), b), dt, mode)  # noqa: E731
    return binary(ins, _post(ins, exact, t), t)


def dec_fma(ins: Ins):
    """fma / mad of floats (single rounding for f32 via float64)."""
    t = ins.type()
    if t in ("bf16", "bf16x2"):
        return dec_fma_bf16(ins)
    ins.nargs(4)
    ins.only(_ROUND | {"ftz", "sat"})
    mode = _rmode(ins)
    if t in ("f16", "f16x2"):
        def f16fma(a, b, c):
            return (np.asarray(a, np.float64) * b + np.asarray(c, np.float64)).astype(
                np.float16)
        return ternary(ins, _lift(_post(ins, f16fma, "f16"), t), t)
    if t == "f64":
        fn = lambda a, b, c: fma_f64(a, b, c, mode)  # noqa: E731
    else:
        fn = lambda a, b, c: fma_f32(a, b, c, mode)  # noqa: E731
    return ternary(ins, _post(ins, fn, t), t)


@op("fma")
def dec_fma_op(ins: Ins):
    """Decoder of ``fma`` (see the module docstring)."""
    return dec_fma(ins)


def dec_div(ins: Ins):
    """div.{rn,rz,rm,rp,approx,full} of floats."""
    t = ins.type()
    ins.nargs(3)
    ins.only(_ROUND | {"ftz", "approx", "full", "sat"})
    mode = _rmode(ins)
    dt = DTYPES[t]
    if t == "f32" and ins.flags & {"approx", "full"}:
        fn = approx.div_approx if "approx" in ins.flags else approx.div_full
    elif mode == "rn":
        fn = np.divide
    elif t == "f64":
        def fn(a, b):  # type: ignore[misc]
            return directed.div_f64(a, b, mode)
    else:
        def fn(a, b):  # type: ignore[misc]
            return round_to(np.asarray(a, np.float64) / b, dt, mode)
    return binary(ins, _post(ins, fn, t), t)


def dec_absneg(ins: Ins):
    """abs/neg of floats (sign bit only)."""
    t = ins.type()
    ins.nargs(2)
    ins.only({"ftz"})
    f = _post(ins, np.abs if ins.base == "abs" else np.negative, t)
    return unary(ins, _lift(f, t), t)


def dec_minmax(ins: Ins):
    """min/max of floats: a NaN operand yields the other one (fmin/fmax); of two zeros,
    +0.0 > -0.0 (the PTX ISA's rule, whatever the operands' order)."""
    t = ins.type()
    ins.nargs(3)
    ins.only({"ftz", "NaN", "xorsign", "abs"})
    f: object
    if "NaN" in ins.flags:
        f = np.minimum if ins.base == "min" else np.maximum
    else:
        f = _nan_yields_other(np.fmin if ins.base == "min" else np.fmax)
    return binary(ins, _lift(_post(ins, _zeros_ordered(f, ins.base == "min"), t), t), t)


def _zeros_ordered(f, is_min: bool):
    """``f`` with -0.0 below +0.0: numpy leaves the sign of a tie of zeros to its loop
    (which operand its SIMD path keeps), PTX makes min(+0, -0) -0 and max +0."""
    def g(a, b):
        r = f(a, b)
        both = (a == 0) & (b == 0)
        # min keeps a when a is -0 (else b, -0 or +0); max keeps a when a is +0
        return np.where(both, np.where(np.signbit(a) == is_min, a, b), r)
    return g


def _nan_yields_other(f):
    """``f`` (fmin/fmax) with a NaN operand yielding the other one, b's NaN tested first as
    the compiled engine does: numpy's own loops return a signaling NaN quieted instead on
    arrays too short for their SIMD path (a few active lanes)."""
    def g(a, b):
        return np.where(np.isnan(b), a, np.where(np.isnan(a), b, f(a, b)))
    return g


def _rsqrt(x):
    return (1 / np.sqrt(x)).astype(np.asarray(x).dtype)


def _rcp(x):
    return (np.asarray(x).dtype.type(1) / x)


_UNARY: dict[str, Callable] = {
    "sqrt": np.sqrt, "rsqrt": _rsqrt, "rcp": _rcp, "ex2": np.exp2, "lg2": np.log2,
    "sin": np.sin, "cos": np.cos, "tanh": np.tanh}
# the .approx forms (ex2 ... tanh are .approx whenever they are .f32): see approx.py
_APPROX: dict[tuple[str, str], Callable] = {
    ("ex2", "f32"): approx.ex2, ("lg2", "f32"): approx.lg2, ("sin", "f32"): approx.sin,
    ("cos", "f32"): approx.cos, ("tanh", "f32"): approx.tanh, ("rcp", "f32"): approx.rcp,
    ("sqrt", "f32"): approx.sqrt, ("rsqrt", "f32"): approx.rsqrt,
    ("rsqrt", "f64"): approx.rsqrt, ("rcp", "f64"): approx.rcp_f64}


def approx_fn(base: str, t: str, flags) -> Callable | None:
    """The hardware-like function of an .approx instruction, None for exact ones."""
    if base in ("sqrt", "rsqrt", "rcp") and "approx" not in flags:
        return None
    return _APPROX.get((base, t))


@op(*_UNARY)
def dec_unary(ins: Ins):
    """Decoder of sqrt, rsqrt, rcp, ex2, lg2, sin, cos, tanh (.approx: see approx.py)."""
    t = ins.type()
    ins.nargs(2)
    ins.only(_ROUND | {"ftz", "approx", "full"})
    fn = approx_fn(ins.base, t, ins.flags) or _UNARY[ins.base]
    mode = _rmode(ins)
    dt = DTYPES[t]
    if mode != "rn" and t == "f32" and ins.base in ("sqrt", "rcp"):
        inner = fn
        fn = lambda a: round_to(inner(np.asarray(a, np.float64)), dt, mode)  # noqa: E731
    elif mode != "rn" and t == "f64" and ins.base in ("sqrt", "rcp"):
        fn = (lambda a: directed.sqrt_f64(a, mode)) if ins.base == "sqrt" else \
            (lambda a: directed.div_f64(1.0, a, mode))
    return unary(ins, _post(ins, fn, t), t)


@op("copysign")
def dec_copysign(ins: Ins):
    """Decoder of ``copysign`` (see the module docstring)."""
    t = ins.type()
    ins.nargs(3)
    return binary(ins, lambda a, b: np.copysign(b, a).astype(DTYPES[t]), t)


_TESTP: dict[str, Callable] = {
    "finite": np.isfinite, "infinite": np.isinf, "number": lambda x: ~np.isnan(x),
    "notanumber": np.isnan,
          "normal": lambda x: np.isfinite(x) & ((np.abs(x) >= np.finfo(x.dtype).tiny) | (x == 0)),
          "subnormal": lambda x: (x != 0) & (np.abs(x) < np.finfo(x.dtype).tiny)}


@op("testp")
def dec_testp(ins: Ins):
    """Decoder of ``testp`` (see the module docstring)."""
    t = ins.type()
    ins.nargs(2)
    kinds = ins.flags & set(_TESTP)
    if len(kinds) != 1:
        raise ins.fail("testp needs one test")
    f = _TESTP[kinds.pop()]
    return unary(ins, lambda x: f(np.asarray(x)), t, "pred")
