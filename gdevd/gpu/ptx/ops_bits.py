"""Bit operations: and/or/xor/not/cnot (also on predicates), shl/shr/shf, popc, clz, bfind,
brev, bfe, bfi, bmsk, prmt, lop3, dp4a/dp2a."""

from __future__ import annotations

import numpy as np

from .decode import Ins, binary, op, ternary, unary
from .ptxtypes import DTYPES, SIGNED, UNSIGNED

_LOGIC = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}


@op("and", "or", "xor")
def dec_logic(ins: Ins):
    """Decoder of ``and``/``or``/``xor`` (see the module docstring)."""
    ins.nargs(3)
    return binary(ins, _LOGIC[ins.base], ins.type())


@op("not")
def dec_not(ins: Ins):
    """Decoder of ``not`` (see the module docstring)."""
    ins.nargs(2)
    t = ins.type()
    return unary(ins, np.logical_not if t == "pred" else np.invert, t)


@op("cnot")
def dec_cnot(ins: Ins):
    """Decoder of ``cnot`` (see the module docstring)."""
    ins.nargs(2)
    t = ins.type()
    return unary(ins, lambda a: (np.asarray(a) == 0).astype(DTYPES[t]), t)


def _shift(a, b, t: str, left: bool):
    dt = DTYPES[t]
    bits = dt.itemsize * 8
    b = np.asarray(b).astype(np.uint32)
    amt = np.minimum(b, bits - 1).astype(dt)
    if left:
        return np.where(b >= bits, dt.type(0), np.left_shift(a, amt)).astype(dt)
    r = np.right_shift(a, amt)
    if dt.kind == "u":
        r = np.where(b >= bits, dt.type(0), r)
    return r.astype(dt)


@op("shl", "shr")
def dec_shift(ins: Ins):
    """Decoder of ``shl``/``shr`` (see the module docstring)."""
    ins.nargs(3)
    t = ins.type()
    if t[0] == "b":
        t = "u" + t[1:]
    left = ins.base == "shl"
    return binary(ins, lambda a, b: _shift(a, b, t, left), t, t_b="u32")


@op("shf")
def dec_shf(ins: Ins):
    """Funnel shift of the 64-bit value b:a by c (clamped to 32 or wrapped mod 32)."""
    ins.nargs(4)
    left = "l" in ins.flags
    clamp = "clamp" in ins.flags

    def fn(a, b, c):
        n = np.asarray(c).astype(np.uint64)
        n = np.minimum(n, 32) if clamp else n & np.uint64(31)
        v = (np.asarray(b).astype(np.uint64) << np.uint64(32)) | np.asarray(a).astype(np.uint64)
        r = (v << n) >> np.uint64(32) if left else v >> n
        return (r & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    return ternary(ins, fn, "b32", t_c="u32")


def popcount(x) -> np.ndarray:
    """Population count of unsigned integers (any width up to 64) as uint32."""
    x = np.asarray(x)
    if x.dtype.kind != "u":
        x = x.view(UNSIGNED[x.dtype.itemsize])
    v = x.astype(np.uint64)
    return np.bitwise_count(v).astype(np.uint32)


def clz(x, bits: int) -> np.ndarray:
    """Count of leading zeros within ``bits`` (a shift ladder on the bit length)."""
    v = np.asarray(x).view(UNSIGNED[bits // 8]).astype(np.uint64)
    length = np.zeros(v.shape, dtype=np.uint32)
    for s in (32, 16, 8, 4, 2, 1):
        big = (v >> np.uint64(s)) != 0
        length = length + np.where(big, s, 0).astype(np.uint32)
        v = np.where(big, v >> np.uint64(s), v)
    length = length + (v != 0).astype(np.uint32)
    return (np.uint32(bits) - length).astype(np.uint32)


@op("popc")
def dec_popc(ins: Ins):
    """Decoder of ``popc`` (see the module docstring)."""
    ins.nargs(2)
    return unary(ins, popcount, ins.type(), "u32")


@op("clz")
def dec_clz(ins: Ins):
    """Decoder of ``clz`` (see the module docstring)."""
    ins.nargs(2)
    t = ins.type()
    bits = DTYPES[t].itemsize * 8
    return unary(ins, lambda a: clz(a, bits), t, "u32")


@op("bfind")
def dec_bfind(ins: Ins):
    """Position of the most significant non-sign bit, 0xffffffff if none (.shiftamt: from top)."""
    ins.nargs(2)
    t = ins.type()
    bits = DTYPES[t].itemsize * 8
    shiftamt = "shiftamt" in ins.flags

    def fn(a):
        a = np.asarray(a)
        if a.dtype.kind == "i":
            a = np.where(a < 0, ~a, a)
        z = clz(a, bits).astype(np.int64)
        pos = bits - 1 - z
        r = (bits - 1 - pos) if shiftamt else pos
        return np.where(z == bits, 0xFFFFFFFF, r).astype(np.uint32)
    return unary(ins, fn, t, "u32")


def brev(a, bits: int):
    """Bit reversal of ``bits``-wide unsigned values."""
    v = np.asarray(a).view(UNSIGNED[bits // 8]).astype(np.uint64)
    r = np.zeros(v.shape, dtype=np.uint64)
    for _ in range(bits):
        r = (r << np.uint64(1)) | (v & np.uint64(1))
        v = v >> np.uint64(1)
    return r.astype(UNSIGNED[bits // 8])


@op("brev")
def dec_brev(ins: Ins):
    """Decoder of ``brev`` (see the module docstring)."""
    ins.nargs(2)
    t = ins.type()
    bits = DTYPES[t].itemsize * 8
    return unary(ins, lambda a: brev(a, bits), t)


@op("bfe")
def dec_bfe(ins: Ins):
    """Bit-field extract: len bits from pos, sign-extended for signed types."""
    ins.nargs(4)
    t = ins.type()
    dt = DTYPES[t]
    bits = dt.itemsize * 8

    def fn(a, b, c):
        pos = np.asarray(b).astype(np.int64) & 0xFF
        ln = np.asarray(c).astype(np.int64) & 0xFF
        u = np.asarray(a).view(UNSIGNED[dt.itemsize]).astype(np.uint64)
        shifted = u >> np.minimum(pos, 63).astype(np.uint64)
        shifted = np.where(pos >= bits, np.uint64(0), shifted)
        mask = np.where(ln >= 64, ~np.uint64(0),
                        (np.uint64(1) << np.minimum(ln, 63).astype(np.uint64)) - np.uint64(1))
        field = shifted & mask
        if dt.kind == "i":   # sign-extend from bit min(pos+len-1, msb) of a
            msb = np.minimum(pos + ln - 1, bits - 1)
            sbit = (np.asarray(a).astype(np.int64) >> np.clip(msb, 0, bits - 1)) & 1
            valid = np.clip(msb - pos + 1, 0, 63).astype(np.uint64)
            vmask = (np.uint64(1) << valid) - np.uint64(1)
            field = (shifted & vmask) | np.where(sbit != 0, ~vmask, np.uint64(0))
            field = np.where(ln == 0, np.uint64(0), field)
            return field.view(np.int64).astype(dt) if np.ndim(field) else \
                np.asarray(field).view(np.int64).astype(dt)
        return field.astype(dt)
    return ternary(ins, fn, t, t_b="u32", t_c="u32")


@op("bfi")
def dec_bfi(ins: Ins):
    """Bit-field insert: d = b with len bits at pos replaced by a's low bits."""
    ins.nargs(5)
    t = ins.type()
    dt = DTYPES[t]
    bits = dt.itemsize * 8
    d, a, b, c, e = ins.dst(0), ins.src(1), ins.src(2), ins.src(3), ins.src(4)

    def fn(a, b, pos, ln):
        pos = np.asarray(pos).astype(np.int64) & 0xFF
        ln = np.minimum(np.asarray(ln).astype(np.int64) & 0xFF, bits)
        ua = np.asarray(a).astype(np.uint64)
        ub = np.asarray(b).astype(np.uint64)
        mask = (np.where(ln >= 64, ~np.uint64(0),
                         (np.uint64(1) << ln.astype(np.uint64)) - np.uint64(1)))
        mask = np.where(pos >= bits, np.uint64(0), mask << np.minimum(pos, 63).astype(np.uint64))
        r = (ub & ~mask) | ((ua << np.minimum(pos, 63).astype(np.uint64)) & mask)
        return (r & np.uint64((1 << bits) - 1)).astype(UNSIGNED[dt.itemsize])

    def bind(env):
        w = env.wr(d, t)
        ra, rb, rc, re = env.rd(a, t), env.rd(b, t), env.rd(c, "u32"), env.rd(e, "u32")
        return lambda idx: w(idx, fn(ra(idx), rb(idx), rc(idx), re(idx)))
    return bind


def bmsk(a, b, clamp: bool):
    """sm_70's bit mask: ``b`` ones from bit ``a`` (PTX ISA ``bmsk``; both taken modulo 32,
    or with ``.clamp`` a position or width of 32 and more: no bits from there)."""
    a = np.asarray(a).astype(np.uint64)
    b = np.asarray(b).astype(np.uint64)
    a1, b1 = a & np.uint64(31), b & np.uint64(31)
    full = np.uint64(0xFFFFFFFF)
    mask0 = (full << a1) & full
    over = a1 + b1 >= 32
    if clamp:
        mask0 = np.where(a >= 32, np.uint64(0), mask0)
        over = over | (a >= 32) | (b >= 32)
    mask1 = np.where(over, np.uint64(0), np.where(b1 == 0, full, (full << (a1 + b1)) & full))
    return (mask0 & ~mask1 & full).astype(np.uint32)


@op("bmsk")
def dec_bmsk(ins: Ins):
    """Decoder of ``bmsk.{clamp,wrap}.b32`` (see :func:`bmsk`)."""
    ins.nargs(3)
    ins.only({"clamp", "wrap"})
    if ins.type() != "b32" or len(ins.flags) != 1:
        raise ins.fail("bmsk needs .clamp or .wrap and .b32")
    return binary(ins, lambda a, b: bmsk(a, b, "clamp" in ins.flags), "b32", t_b="u32")


def prmt(a, b, c, mode: str | None):
    """Byte permute of the 8 bytes b:a selected by c (default mode only, plus f4e/b4e/...)."""
    a = np.asarray(a).astype(np.uint64)
    b = np.asarray(b).astype(np.uint64)
    c = np.asarray(c).astype(np.uint64)
    src = a | (b << np.uint64(32))
    out = np.zeros(np.broadcast(a, b, c).shape, dtype=np.uint64)
    for k in range(4):
        if mode is None:
            sel = (c >> np.uint64(4 * k)) & np.uint64(0xF)
        else:
            sel = _prmt_mode_sel(mode, c & np.uint64(3), k)
        byte = (src >> ((sel & np.uint64(7)) * np.uint64(8))) & np.uint64(0xFF)
        if mode is None:
            sign = (byte >> np.uint64(7)) * np.uint64(0xFF)
            byte = np.where((sel & np.uint64(8)) != 0, sign, byte)
        out = out | (byte << np.uint64(8 * k))
    return out.astype(np.uint32)


def _prmt_mode_sel(mode: str, s, k: int):
    """Selector of result byte ``k`` for the special prmt modes (PTX ISA table)."""
    s = s.astype(np.int64)
    if mode == "f4e":
        r = (s + k) & 7
    elif mode == "b4e":
        r = (s - k) & 7
    elif mode == "rc8":
        r = s
    elif mode == "ecl":
        r = np.maximum(s, k)
    elif mode == "ecr":
        r = np.minimum(s, k)
    else:  # rc16
        r = (s & 1) * 2 + (k & 1)
    return np.asarray(r).astype(np.uint64)


@op("prmt")
def dec_prmt(ins: Ins):
    """Decoder of ``prmt`` (see the module docstring)."""
    ins.nargs(4)
    modes = ins.flags & {"f4e", "b4e", "rc8", "ecl", "ecr", "rc16"}
    mode = next(iter(modes)) if modes else None
    return ternary(ins, lambda a, b, c: prmt(a, b, c, mode), "b32")


@op("lop3")
def dec_lop3(ins: Ins):
    """Decoder of ``lop3`` (see the module docstring)."""
    ins.nargs(5)
    d, a, b, c, lut = ins.dst(0), ins.src(1), ins.src(2), ins.src(3), ins.args[4]
    if not hasattr(lut, "value"):
        raise ins.fail("lop3 needs an immediate LUT")
    table = int(lut.value) & 0xFF

    def fn(x, y, z):
        r = np.zeros(np.broadcast(x, y, z).shape, dtype=np.uint32)
        for i in range(8):
            if table >> i & 1:
                r |= (x if i & 4 else ~x) & (y if i & 2 else ~y) & (z if i & 1 else ~z)
        return r

    def bind(env):
        w, ra, rb, rc = env.wr(d, "b32"), env.rd(a, "b32"), env.rd(b, "b32"), env.rd(c, "b32")
        return lambda idx: w(idx, fn(ra(idx), rb(idx), rc(idx)))
    return bind


@op("dp4a", "dp2a")
def dec_dp(ins: Ins):
    """Dot product of packed 8-bit (dp4a) or 16x8-bit (dp2a) lanes, accumulated in 32 bits."""
    ins.nargs(4)
    if len(ins.types) != 2:
        raise ins.fail("dp4a/dp2a need two types")
    ta, tb = ins.types
    lo = "lo" in ins.flags

    def lanes(v, t, width, count, shift0=0):
        v = np.asarray(v).astype(np.uint32).astype(np.int64)
        out = []
        for k in range(count):
            x = (v >> (shift0 + width * k)) & ((1 << width) - 1)
            if t == "s32":
                x = np.where(x >= 1 << (width - 1), x - (1 << width), x)
            out.append(x)
        return out

    def fn(a, b, c):
        if ins.base == "dp4a":
            pa, pb = lanes(a, ta, 8, 4), lanes(b, tb, 8, 4)
        else:
            pa, pb = lanes(a, ta, 16, 2), lanes(b, tb, 8, 2, 0 if lo else 16)
        acc = np.asarray(c).astype(np.int64)
        for x, y in zip(pa, pb, strict=False):
            acc = acc + x * y
        rt = SIGNED[4] if "s32" in (ta, tb) else UNSIGNED[4]
        return acc.astype(np.uint64).astype(np.uint32).view(rt)
    rt = "s32" if "s32" in (ta, tb) else "u32"
    return ternary(ins, fn, ta, rt, t_b=tb, t_c=rt)
