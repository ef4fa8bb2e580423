"""Integer arithmetic: add/sub/mul/mad (.lo/.hi/.wide/.sat), mul24/mad24, sad, div, rem,
abs, neg, min, max, add.cc/addc/sub.cc/subc.  Float variants dispatch to ops_float.

All integer arithmetic wraps at the type's width, as in PTX.
"""

from __future__ import annotations

import numpy as np

from . import ops_float
from .decode import Ins, binary, op, ternary, unary
from .ptxtypes import DTYPES, SIGNED, UNSIGNED, is_float


def _wide(t: str) -> str:
    return ("s" if t[0] == "s" else "u") + str(2 * int(t[1:]))


def _clip_s32(v):
    return np.clip(v, -(1 << 31), (1 << 31) - 1).astype(np.int32)


def mul_hi(a, b, t: str):
    """High half of the full product of two type-``t`` integers."""
    dt = DTYPES[t]
    bits = dt.itemsize * 8
    if bits <= 32:
        wide = SIGNED[8] if t[0] == "s" else UNSIGNED[8]
        return ((a.astype(wide) * np.asarray(b).astype(wide)) >> bits).astype(dt)
    return _mul_hi64(a, b, t[0] == "s")


def _mul_hi64(a, b, signed: bool):
    """High 64 bits of a 64x64 product, from 32-bit partial products."""
    u64 = np.uint64
    st = np.int64 if signed else np.uint64
    a_u = np.asarray(a).astype(st).view(u64)
    b_u = np.asarray(b).astype(st).view(u64)
    m32, s32 = u64(0xFFFFFFFF), u64(32)
    a_lo, a_hi = a_u & m32, a_u >> s32
    b_lo, b_hi = b_u & m32, b_u >> s32
    ll, lh, hl, hh = a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi
    mid = (ll >> s32) + (lh & m32) + (hl & m32)
    hi = hh + (lh >> s32) + (hl >> s32) + (mid >> s32)
    if not signed:
        return hi
    # signed: subtract the two's-complement corrections of negative operands
    hi = hi - np.where(a_u >> u64(63) != 0, b_u, u64(0)) \
        - np.where(b_u >> u64(63) != 0, a_u, u64(0))
    return np.asarray(hi).view(np.int64)


def _mode(ins: Ins) -> str:
    for m in ("lo", "hi", "wide"):
        if m in ins.flags:
            return m
    return "lo"


@op("add", "sub")
def dec_add(ins: Ins):
    """Decoder of ``add``/``sub`` (see the module docstring)."""
    t = ins.type()
    if is_float(t):
        return ops_float.dec_arith(ins)
    ins.nargs(3)
    ins.only({"sat", "cc"})
    if ins.flags & {"cc"}:
        return _carry(ins, t, carry_in=False)
    sub = ins.base == "sub"
    if "sat" in ins.flags:
        if t != "s32":
            raise ins.fail(".sat needs .s32")
        f = (lambda a, b: _clip_s32(a.astype(np.int64) - b)) if sub else \
            (lambda a, b: _clip_s32(a.astype(np.int64) + b))
        return binary(ins, f, t)
    return binary(ins, np.subtract if sub else np.add, t)


@op("addc", "subc")
def dec_addc(ins: Ins):
    """Decoder of ``addc``/``subc`` (see the module docstring)."""
    ins.nargs(3)
    ins.only({"cc"})
    return _carry(ins, ins.type(), carry_in=True)


def _carry(ins: Ins, t: str, carry_in: bool):
    """add.cc/addc/sub.cc/subc on 32/64-bit values with a per-thread carry flag.

    The flag is the hardware's: the carry out of the adder, where a subtraction is
    ``x + ~y + 1`` (sub.cc) or ``x + ~y + CF`` (subc).  So sub.cc sets CF when nothing is
    borrowed and subc subtracts ``1 - CF``; a chain of subtractions alone reads as PTX's
    borrow, and a chain mixing addc and subc gives what an H200 gives."""
    d, a, b = ins.dst(0), ins.src(1), ins.src(2)
    ut = "u" + t[1:]
    sub = ins.base.startswith("sub")
    write_cc = "cc" in ins.flags

    def bind(env):
        w, ra, rb = env.wr(d, ut), env.rd(a, ut), env.rd(b, ut)
        cc = env.regs.setdefault("%%cc", np.zeros(env.n, dtype=np.uint8))
        one = DTYPES[ut].type(1)

        def run(idx):
            x, y = ra(idx), rb(idx)
            cin = (cc if idx is None else cc[idx]).astype(DTYPES[ut]) if carry_in else 0
            if sub:   # CF is the adder's carry of x + ~y + CF: set when nothing is borrowed
                borrow = one - cin if carry_in else 0
                r = x - y - borrow
                cout = ~((x < y) | ((x == y) & (borrow == one)))
            else:
                r = x + y + cin
                cout = (r < x) | ((r == x) & (cin == one)) if carry_in else (r < x)
            w(idx, r)
            if write_cc:
                if idx is None:
                    cc[...] = cout
                else:
                    cc[idx] = cout
        return run
    return bind


@op("mul")
def dec_mul(ins: Ins):
    """Decoder of ``mul`` (see the module docstring)."""
    t = ins.type()
    if is_float(t):
        return ops_float.dec_arith(ins)
    ins.nargs(3)
    ins.only({"lo", "hi", "wide"})
    mode = _mode(ins)
    if mode == "lo":
        return binary(ins, np.multiply, t)
    if mode == "hi":
        return binary(ins, lambda a, b: mul_hi(a, b, t), t)
    wt = _wide(t)
    wdt = DTYPES[wt]
    return binary(ins, lambda a, b: np.asarray(a).astype(wdt) * np.asarray(b).astype(wdt),
                  t, wt)


@op("mad")
def dec_mad(ins: Ins):
    """Decoder of ``mad`` (see the module docstring)."""
    t = ins.type()
    if is_float(t):
        return ops_float.dec_fma(ins)
    ins.nargs(4)
    ins.only({"lo", "hi", "wide", "sat", "cc"})
    mode = _mode(ins)
    if "cc" in ins.flags:
        return _mad_carry(ins, t, mode, carry_in=False)
    if mode == "lo":
        return ternary(ins, lambda a, b, c: a * b + c, t)
    if mode == "hi":
        if "sat" in ins.flags:
            return ternary(ins, lambda a, b, c: _clip_s32(
                mul_hi(a, b, t).astype(np.int64) + c), t)
        return ternary(ins, lambda a, b, c: mul_hi(a, b, t) + c, t)
    wt = _wide(t)
    wdt = DTYPES[wt]
    return ternary(ins, lambda a, b, c: np.asarray(a).astype(wdt) * np.asarray(b).astype(wdt)
                   + c, t, wt, t_c=wt)


@op("madc")
def dec_madc(ins: Ins):
    """Decoder of ``madc`` (see the module docstring)."""
    ins.nargs(4)
    ins.only({"lo", "hi", "cc"})
    return _mad_carry(ins, ins.type(), _mode(ins), carry_in=True)


def _mad_carry(ins: Ins, t: str, mode: str, carry_in: bool):
    """mad.lo.cc / madc.{lo,hi}[.cc]: d = (a*b).{lo,hi} + c (+ CF), optionally setting CF."""
    if t not in ("u32", "s32", "u64", "s64"):
        raise ins.fail("mad.cc/madc need a 32- or 64-bit integer type")
    d, a, b, c = ins.dst(0), ins.src(1), ins.src(2), ins.src(3)
    ut = "u" + t[1:]
    udt = DTYPES[ut]
    write_cc = "cc" in ins.flags

    def bind(env):
        w = env.wr(d, ut)
        ra, rb, rc = env.rd(a, t), env.rd(b, t), env.rd(c, ut)
        cc = env.regs.setdefault("%%cc", np.zeros(env.n, dtype=np.uint8))

        def run(idx):
            x, y = ra(idx), rb(idx)
            p = mul_hi(x, y, t) if mode == "hi" else x * y
            p = np.asarray(p).astype(DTYPES[t]).view(udt) if np.ndim(p) else \
                np.asarray(p).astype(DTYPES[t]).astype(udt)
            z = rc(idx)
            r = p + z
            cout = r < p
            if carry_in:
                cin = (cc if idx is None else cc[idx]).astype(udt)
                r2 = r + cin
                cout = cout | (r2 < r)
                r = r2
            w(idx, r)
            if write_cc:
                if idx is None:
                    cc[...] = cout
                else:
                    cc[idx] = cout
        return run
    return bind


def _i24(v, t):
    v = np.asarray(v).astype(np.int64) & 0xFFFFFF
    return np.where(v & 0x800000, v - 0x1000000, v) if t == "s32" else v


@op("mul24", "mad24")
def dec_mul24(ins: Ins):
    """Decoder of ``mul24``/``mad24`` (see the module docstring)."""
    t = ins.type()
    if t not in ("s32", "u32"):
        raise ins.fail("mul24/mad24 need .s32 or .u32")
    ins.only({"lo", "hi"})
    dt = DTYPES[t]
    hi = "hi" in ins.flags

    def prod(a, b):
        p = _i24(a, t) * _i24(b, t)
        return ((p >> 16) if hi else p).astype(np.int64).astype(np.uint64).astype(
            np.uint32).view(dt)
    if ins.base == "mul24":
        ins.nargs(3)
        return binary(ins, prod, t)
    ins.nargs(4)
    return ternary(ins, lambda a, b, c: prod(a, b) + c, t)


@op("sad")
def dec_sad(ins: Ins):
    """Decoder of ``sad`` (see the module docstring)."""
    t = ins.type()
    ins.nargs(4)
    return ternary(ins, lambda a, b, c: np.where(a > b, a - b, b - a).astype(DTYPES[t]) + c, t)


def int_div(a, b, t: str):
    """Truncating division; x/0 gives all ones (as the hardware does)."""
    dt = DTYPES[t]
    a, b = np.asarray(a), np.asarray(b)
    if dt.kind == "u":
        q = np.floor_divide(a, np.where(b == 0, 1, b).astype(dt))
        return np.where(b == 0, dt.type(-1 & ((1 << 8 * dt.itemsize) - 1)), q).astype(dt)
    bb = np.where(b == 0, 1, b).astype(dt)
    q = np.floor_divide(a, bb)
    r = a - q * bb
    q = q + ((r != 0) & ((a < 0) != (bb < 0))).astype(dt)
    return np.where(b == 0, dt.type(-1), q).astype(dt)


def int_rem(a, b, t: str):
    """Remainder with the sign of the dividend; x%0 gives all ones (as the hardware does)."""
    dt = DTYPES[t]
    q = int_div(a, b, t)
    return np.where(np.asarray(b) == 0, np.int64(-1).astype(dt), a - q * b).astype(dt)


@op("div", "rem")
def dec_div(ins: Ins):
    """Decoder of ``div``/``rem`` (see the module docstring)."""
    t = ins.type()
    if is_float(t):
        if ins.base == "rem":
            raise ins.fail("rem has no float form")
        return ops_float.dec_div(ins)
    ins.nargs(3)
    ins.only(set())
    f = int_div if ins.base == "div" else int_rem
    return binary(ins, lambda a, b: f(a, b, t), t)


@op("abs", "neg")
def dec_absneg(ins: Ins):
    """Decoder of ``abs``/``neg`` (see the module docstring)."""
    t = ins.type()
    if is_float(t):
        return ops_float.dec_absneg(ins)
    ins.nargs(2)
    return unary(ins, np.abs if ins.base == "abs" else np.negative, t)


@op("min", "max")
def dec_minmax(ins: Ins):
    """Decoder of ``min``/``max`` (see the module docstring)."""
    t = ins.type()
    if is_float(t):
        return ops_float.dec_minmax(ins)
    ins.nargs(3)
    ins.only({"relu"})
    f = np.minimum if ins.base == "min" else np.maximum
    if "relu" in ins.flags:
        return binary(ins, lambda a, b: np.maximum(f(a, b), DTYPES[t].type(0)), t)
    return binary(ins, f, t)
