"""Conversions and moves: cvt between every integer and float type (rounding, .sat, .ftz),
mov of registers, immediates, special registers and symbol addresses, vector pack/unpack."""

from __future__ import annotations

import numpy as np

from . import bf16, directed
from .decode import Ins, binary, op, unary
from .ops_float import ftz, round_to, saturate
from .ptxtypes import DTYPES, UNSIGNED, size_of
from .syntax import Reg, Sink, Vec

_IRND = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}
_FRND = {"rn", "rz", "rm", "rp"}


def _int_range(dt):
    info = np.iinfo(dt)
    return int(info.min), int(info.max)


def nan_to_int(st: str, dst: str) -> int:
    """The integer a NaN of float type ``st`` converts to in integer type ``dst``, as an
    H200 gives it: from f64 the destination's sign-bit pattern (0x80, 0x8000, ...), from
    f32 0x8000000000000000 into 64 bits and 0 into narrower types, from f16 0."""
    bits = 8 * size_of(dst)
    if st == "f64" or (st == "f32" and bits == 64):
        return 1 << (bits - 1)
    return 0


def float_to_int(x, dt, rnd, nan_bits: int = 0) -> np.ndarray:
    """Round float ``x`` with ``rnd`` and convert to integer ``dt``, saturating; a NaN gives
    ``nan_bits`` (see :func:`nan_to_int`)."""
    x = np.asarray(x, dtype=np.float64)
    r = rnd(x)
    lo, hi = _int_range(dt)
    nan_v = np.array(nan_bits, np.uint64).astype(dt)
    nan = np.isnan(r)
    if dt.itemsize == 8:   # float64 cannot hold 2**63-1 exactly: clamp by comparison
        big = r >= float(hi) + 1.0
        small = r < float(lo)
        safe = np.where(nan | big | small, 0.0, r)
        out = safe.astype(dt)
        out = np.where(big, dt.type(hi), out)
        out = np.where(small, dt.type(lo), out)
        return np.where(nan, nan_v, out).astype(dt)
    return np.where(nan, nan_v, np.clip(np.where(nan, 0, r), lo, hi).astype(dt)).astype(dt)


def convert(x, st: str, dst: str, flags: set[str]):
    """The value of ``cvt.<flags>.dst.st`` applied to ``x`` (already read as ``st``)."""
    sdt, ddt = DTYPES[st], DTYPES[dst]
    x = np.asarray(x)
    sat = "sat" in flags
    if sdt.kind == "f" and "ftz" in flags and st == "f32":
        x = ftz(x)
    if ddt.kind == "f":
        if sdt.kind == "f":
            irnd = flags & set(_IRND)
            if irnd:
                r = _IRND[irnd.pop()](x.astype(np.float64))
                r = r.astype(ddt)
            else:
                mode = next(iter(flags & _FRND), "rn")
                r = round_to(x.astype(np.float64), ddt, mode) if ddt.itemsize < sdt.itemsize \
                    else x.astype(ddt)
        else:
            r = directed.int_to_float(x, ddt, next(iter(flags & _FRND), "rn"))
        if sat:
            r = saturate(r)
        if "ftz" in flags and dst == "f32":
            r = ftz(r)
        return r
    if sdt.kind == "f":
        irnd = flags & set(_IRND)
        rnd = _IRND[irnd.pop()] if irnd else np.trunc
        return float_to_int(x, ddt, rnd, nan_to_int(st, dst))
    if sat:
        lo, hi = _int_range(ddt)
        return np.clip(x.astype(np.float64) if sdt.itemsize == 8 else x.astype(np.int64),
                       lo, hi).astype(ddt) if sdt.itemsize < 8 else _sat64(x, ddt)
    return x.astype(ddt)


def _sat64(x, ddt):
    lo, hi = _int_range(ddt)
    if x.dtype.kind == "u":
        return np.where(x > np.uint64(hi), ddt.type(hi), x.astype(ddt)).astype(ddt)
    return np.where(x > hi, ddt.type(hi), np.where(x < lo, ddt.type(lo), x.astype(ddt))) \
        .astype(ddt)


@op("cvt")
def dec_cvt(ins: Ins):
    """Decoder of ``cvt`` (see the module docstring)."""
    if len(ins.types) != 2:
        raise ins.fail("cvt needs a destination and a source type")
    dst, st = ins.types
    if (dst, st) == ("f16x2", "f32"):
        return _cvt_f16x2(ins)
    if "bf16" in (dst, st) or dst == "bf16x2":
        return _cvt_bf16(ins, dst, st)
    ins.nargs(2)
    if dst in ("bf16", "f16x2", "bf16x2") or st in ("bf16", "f16x2", "bf16x2"):
        raise ins.fail("bf16/packed-half conversions are not supported")
    ins.only(set(_IRND) | _FRND | {"sat", "ftz", "relu"})
    flags = set(ins.flags)
    d, a = ins.dst(0), ins.src(1)

    def bind(env):
        w, ra = env.wr(d, dst), env.rd(a, st)
        return lambda idx: w(idx, convert(ra(idx), st, dst, flags))
    return bind


def _cvt_f16x2(ins: Ins):
    """cvt.rn[.relu].f16x2.f32 d, a, b: a rounded to f16 in the upper half of d, b in the
    lower; .relu clamps negative results to 0 and makes a NaN the canonical 0x7FFF."""
    ins.nargs(3)
    ins.only({"rn", "relu"})
    if "rn" not in ins.flags:
        raise ins.fail("cvt.f16x2.f32 needs .rn")
    relu = "relu" in ins.flags
    d, a, b = ins.dst(0), ins.src(1), ins.src(2)

    def half_bits(x) -> np.ndarray:
        h = convert(x, "f32", "f16", {"rn"})
        bits = np.asarray(h).view(np.uint16).astype(np.uint32)
        if relu:
            bits = np.where(np.isnan(h), np.uint32(0x7FFF), np.where(h < 0, np.uint32(0), bits))
        return bits.astype(np.uint32)

    def bind(env):
        w, ra, rb = env.wr(d, "b32"), env.rd(a, "f32"), env.rd(b, "f32")
        return lambda idx: w(idx, (half_bits(ra(idx)) << np.uint32(16)) | half_bits(rb(idx)))
    return bind


def _cvt_bf16(ins: Ins, dst: str, st: str):
    """cvt.{rn,rz}[.relu].bf16.f32 d, a; cvt.{rn,rz}[.relu].bf16x2.f32 d, a, b (a to the
    upper half); cvt.f32.bf16 d, a (exact), as :mod:`.bf16` rounds."""
    if (dst, st) == ("f32", "bf16"):
        ins.nargs(2)
        ins.only(set())
        return unary(ins, bf16.to_f32, "b16", "f32")
    if st != "f32" or dst not in ("bf16", "bf16x2"):
        raise ins.fail(f"cvt.{dst}.{st} is not supported")
    ins.only({"rn", "rz", "relu"})
    if len(ins.flags & {"rn", "rz"}) != 1:
        raise ins.fail(f"cvt.{dst}.f32 needs one of .rn and .rz")
    relu = "relu" in ins.flags
    if "rz" in ins.flags:
        def one(x):
            return bf16.from_f32_rz(np.asarray(x, np.float32), relu)
    else:
        def one(x):
            return bf16.from_f64(np.asarray(x, np.float32).astype(np.float64), relu)
    if dst == "bf16":
        ins.nargs(2)
        return unary(ins, one, "f32", "b16")
    ins.nargs(3)
    return binary(ins, lambda a, b: (one(a).astype(np.uint32) << np.uint32(16)) |
                  one(b).astype(np.uint32), "f32", "b32")


@op("mov")
def dec_mov(ins: Ins):
    """Decoder of ``mov`` (see the module docstring)."""
    ins.nargs(2)
    t = ins.type()
    d, a = ins.args
    if isinstance(d, Vec):
        return _unpack(ins, t, d, a)
    if isinstance(a, Vec):
        return _pack(ins, t, d, a)
    d, a = ins.dst(0), ins.src(1)

    def bind(env):
        w, ra = env.wr(d, t), env.rd(a, t)
        return lambda idx: w(idx, ra(idx))
    return bind


def _parts(ins: Ins, t: str, vec: Vec):
    n = len(vec.items)
    size = size_of(t)
    if size % n:
        raise ins.fail("vector does not divide the packed type")
    pt = "b" + str(size * 8 // n)
    if pt not in DTYPES:
        raise ins.fail("unsupported pack width")
    for it in vec.items:
        if not isinstance(it, Reg | Sink) and not hasattr(it, "value"):
            raise ins.fail("vector element must be a register")
    return pt, size * 8 // n


def _pack(ins: Ins, t: str, d, vec: Vec):
    pt, bits = _parts(ins, t, vec)
    d = ins.dst(0)
    udt = UNSIGNED[size_of(t)]

    def bind(env):
        w = env.wr(d, t)
        rs = [env.rd(it, pt) for it in vec.items]

        def run(idx):
            acc = None
            for k, r in enumerate(rs):
                v = np.asarray(r(idx)).astype(udt) << udt.type(bits * k)
                acc = v if acc is None else acc | v
            w(idx, acc.view(DTYPES[t]) if acc.ndim else acc.astype(udt).view(DTYPES[t]))
        return run
    return bind


def _unpack(ins: Ins, t: str, vec: Vec, a):
    pt, bits = _parts(ins, t, vec)
    a = ins.src(1)
    udt = UNSIGNED[size_of(t)]
    pdt = DTYPES[pt]
    mask = udt.type((1 << bits) - 1)

    def bind(env):
        ra = env.rd(a, "b" + str(size_of(t) * 8))
        ws = [env.wr(it, pt) for it in vec.items]

        def run(idx):
            v = np.asarray(ra(idx)).astype(udt)
            for k, w in enumerate(ws):
                w(idx, ((v >> udt.type(bits * k)) & mask).astype(pdt))
        return run
    return bind
