"""bfloat16 as sm_80 computes on it: conversions from f32 and ``fma`` (nvcc's
``__float2bfloat16``, ``__floats2bfloat162_rn``, and ``__hadd``/``__hmul``/``__hfma`` of
``__nv_bfloat16``, which sm_80 writes as ``fma.rn.bf16[x2]``).

A bf16 register holds its 16 bits (the top half of an f32).  A result is computed in
float64 (an fma's product of two 8-bit significands is exact) and rounded once to bf16:
first to f32 rounding to odd, then to nearest even on the top 16 bits (round-to-odd keeps
the second rounding correct, as f32 has more than 8 + 2 bits).  A NaN result is the
canonical 0x7FFF; ``.relu`` clamps negative results to +0 (and keeps -0).  The compiled
engine does the same operations (``jit/half.h``: ``F2BF``), so both give the same bits.
"""

from __future__ import annotations

import numpy as np

from .decode import Ins, ternary

NAN = np.uint16(0x7FFF)


def to_f32(bits) -> np.ndarray:
    """f32 values of bf16 bit patterns."""
    return (np.asarray(bits).astype(np.uint32) << np.uint32(16)).view(np.float32)


def from_f64(x, relu: bool = False) -> np.ndarray:
    """float64 values rounded once to bf16 bit patterns (see the module docstring)."""
    x = np.asarray(x, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        f = x.astype(np.float32)
        back = f.astype(np.float64)
    u = f.view(np.uint32).copy()
    inexact = (back != x) & ~np.isnan(x)
    over = np.isinf(f) & ~np.isinf(x)
    u = np.where(inexact & (np.abs(back) > np.abs(x)), u - np.uint32(1), u)
    u = np.where(over, (u & np.uint32(0x80000000)) | np.uint32(0x7F7FFFFF), u)
    u = np.where(inexact, u | np.uint32(1), u)
    r = ((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16))
    r = np.where(np.isnan(x), NAN, r.astype(np.uint16))
    if relu:
        r = np.where(~np.isnan(x) & (x < 0), np.uint16(0), r)
    return np.asarray(r, np.uint16)


def from_f32_rz(x, relu: bool = False) -> np.ndarray:
    """f32 values rounded toward zero to bf16 bit patterns (``cvt.rz``): the top 16 bits,
    which never round a finite value up to infinity; a NaN is 0x7FFF, ``.relu`` as
    :func:`from_f64`."""
    f = np.asarray(x, np.float32)
    r = (f.view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    r = np.where(np.isnan(f), NAN, r)
    if relu:
        r = np.where(~np.isnan(f) & (f < 0), np.uint16(0), r)
    return np.asarray(r, np.uint16)


def _pair(fn):
    """``fn`` over bf16 bits lifted to the two halves of b32 words."""
    def g(*xs):
        words = [np.asarray(x).astype(np.uint32) for x in xs]
        lo = fn(*((w & np.uint32(0xFFFF)).astype(np.uint16) for w in words))
        hi = fn(*((w >> np.uint32(16)).astype(np.uint16) for w in words))
        return lo.astype(np.uint32) | (hi.astype(np.uint32) << np.uint32(16))
    return g


def dec_fma_bf16(ins: Ins):
    """fma.rn[.relu].bf16 / .bf16x2 d, a, b, c: a * b + c rounded once to bf16."""
    t = ins.type()
    ins.nargs(4)
    ins.only({"rn", "relu"})
    if "rn" not in ins.flags:
        raise ins.fail(f"fma.{t} needs .rn")
    relu = "relu" in ins.flags

    def fma(a, b, c):
        prod = to_f32(a).astype(np.float64) * to_f32(b).astype(np.float64)
        return from_f64(prod + to_f32(c).astype(np.float64), relu)
    return ternary(ins, _pair(fma) if t == "bf16x2" else fma, "b32" if t == "bf16x2" else "b16")
