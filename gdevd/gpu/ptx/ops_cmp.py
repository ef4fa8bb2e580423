"""Comparisons and selection: setp (every integer and float comparison, boolean combine,
two outputs), set, selp, slct."""

from __future__ import annotations

import numpy as np

from .decode import Ins, op
from .ops_float import ftz
from .ptxtypes import DTYPES, is_float
from .syntax import Pair, Sink


def _nan(a, b):
    return np.isnan(a) | np.isnan(b)


_INT_CMP = {
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal, "lo": np.less, "ls": np.less_equal,
    "hi": np.greater, "hs": np.greater_equal,
}
_FLOAT_CMP = {
    "eq": np.equal, "ne": lambda a, b: np.not_equal(a, b) & ~_nan(a, b),
    "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
    "equ": lambda a, b: np.equal(a, b) | _nan(a, b),
    "neu": np.not_equal,
    "ltu": lambda a, b: ~np.greater_equal(a, b), "leu": lambda a, b: ~np.greater(a, b),
    "gtu": lambda a, b: ~np.less_equal(a, b), "geu": lambda a, b: ~np.less(a, b),
    "num": lambda a, b: ~_nan(a, b), "nan": _nan,
}
_BOOL = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}


def _compare_type(ins: Ins, t: str) -> str:
    """Unsigned comparisons (lo/ls/hi/hs) and b-types compare as unsigned."""
    if t[0] == "b":
        return "u" + t[1:]
    return t


def _cmp(ins: Ins, t: str):
    table = _FLOAT_CMP if is_float(t) else _INT_CMP
    ops = [m for m in ins.mods if m in table]
    if len(ops) != 1:
        raise ins.fail("expected one comparison operator")
    return table[ops[0]]


def _boolop(ins: Ins):
    ops = [m for m in ins.mods if m in _BOOL]
    if len(ops) > 1:
        raise ins.fail("more than one boolean operator")
    return _BOOL[ops[0]] if ops else None


@op("setp")
def dec_setp(ins: Ins):
    """Decoder of ``setp`` (see the module docstring)."""
    t = _compare_type(ins, ins.type())
    cmp = _cmp(ins, t)
    bop = _boolop(ins)
    ins.nargs(4 if bop else 3)
    d = ins.args[0]
    p, q = (d.first, d.second) if isinstance(d, Pair) else (d, Sink())
    a, b = ins.src(1), ins.src(2)
    c = ins.src(3) if bop else None
    if t == "f16x2":
        return _setp_f16x2(p, q, a, b, c, cmp, bop)

    flush = ftz if "ftz" in ins.flags and t == "f32" else (lambda v: v)

    def bind(env):
        wp, wq = env.wr(p, "pred"), env.wr(q, "pred")
        ra, rb = env.rd(a, t), env.rd(b, t)
        rc = env.rd(c, "pred") if c is not None else None

        def run(idx):
            r = cmp(flush(ra(idx)), flush(rb(idx)))
            if rc is None:
                wp(idx, r)
                wq(idx, ~r)
            else:   # both results before either write: p may be the register c was read from
                cv = rc(idx)
                first, second = bop(r, cv), bop(~r, cv)
                wp(idx, first)
                wq(idx, second)
        return run
    return bind


def _setp_f16x2(p, q, a, b, c, cmp, bop):
    """setp.cmp[.bool].f16x2 p|q, a, b[, c]: p from the low halves, q from the high ones."""
    def bind(env):
        wp, wq = env.wr(p, "pred"), env.wr(q, "pred")
        ra, rb = env.rd(a, "b32"), env.rd(b, "b32")
        rc = env.rd(c, "pred") if c is not None else None

        def run(idx):
            res = [cmp(x, y) for x, y in zip(_halves(ra(idx)), _halves(rb(idx)), strict=True)]
            if rc is not None:
                cv = rc(idx)
                res = [bop(r, cv) for r in res]
            wp(idx, res[0])
            wq(idx, res[1])
        return run
    return bind


@op("set")
def dec_set(ins: Ins):
    """set.cmp[.bool].dtype.stype: 0xffffffff / 1.0f when true, 0 otherwise."""
    if len(ins.types) != 2:
        raise ins.fail("set needs a destination and a source type")
    dt_name, st_name = ins.types
    st_name = _compare_type(ins, st_name)
    cmp = _cmp(ins, st_name)
    bop = _boolop(ins)
    ins.nargs(4 if bop else 3)
    d, a, b = ins.dst(0), ins.src(1), ins.src(2)
    c = ins.src(3) if bop else None
    if st_name == "f16x2":
        return _set_f16x2(ins, dt_name, cmp, bop, c)
    ddt = DTYPES[dt_name]
    true = ddt.type(1.0) if ddt.kind == "f" else ddt.type(-1 if ddt.kind == "i" else
                                                           np.iinfo(ddt).max)

    def bind(env):
        w, ra, rb = env.wr(d, dt_name), env.rd(a, st_name), env.rd(b, st_name)
        rc = env.rd(c, "pred") if c is not None else None

        def run(idx):
            r = cmp(ra(idx), rb(idx))
            if rc is not None:
                r = bop(r, rc(idx))
            w(idx, np.where(r, true, ddt.type(0)))
        return run
    return bind


def _halves(v) -> list[np.ndarray]:
    """The low and high ``f16`` halves of packed b32 values."""
    v = np.asarray(v).astype(np.uint32)
    return [((v >> np.uint32(16 * k)) & np.uint32(0xFFFF)).astype(np.uint16).view(np.float16)
            for k in (0, 1)]


def _set_f16x2(ins: Ins, dt_name: str, cmp, bop, c):
    """set.cmp[.bool].{u32,s32,f16x2}.f16x2: each half compared on its own; a true half is
    0xFFFF (integer destinations) or 1.0 (f16x2), a false one 0."""
    if dt_name not in ("u32", "s32", "b32", "f16x2"):
        raise ins.fail(f"set.{dt_name}.f16x2")
    true = np.uint32(0x3C00 if dt_name == "f16x2" else 0xFFFF)
    d, a, b = ins.dst(0), ins.src(1), ins.src(2)

    def bind(env):
        w, ra, rb = env.wr(d, "b32"), env.rd(a, "b32"), env.rd(b, "b32")
        rc = env.rd(c, "pred") if c is not None else None

        def run(idx):
            res = np.uint32(0)
            for k, (x, y) in enumerate(zip(_halves(ra(idx)), _halves(rb(idx)), strict=True)):
                r = cmp(x, y) if rc is None else bop(cmp(x, y), rc(idx))
                res = res | (np.where(r, true, np.uint32(0)).astype(np.uint32) << (16 * k))
            w(idx, np.asarray(res, np.uint32))
        return run
    return bind


@op("selp")
def dec_selp(ins: Ins):
    """Decoder of ``selp`` (see the module docstring)."""
    ins.nargs(4)
    t = ins.type()
    d, a, b, c = ins.dst(0), ins.src(1), ins.src(2), ins.src(3)

    def bind(env):
        w, ra, rb, rc = env.wr(d, t), env.rd(a, t), env.rd(b, t), env.rd(c, "pred")
        dt = DTYPES[t]
        return lambda idx: w(idx, np.where(rc(idx), ra(idx), rb(idx)).astype(dt, copy=False))
    return bind


@op("slct")
def dec_slct(ins: Ins):
    """slct.dtype.ctype d, a, b, c: d = (c >= 0) ? a : b."""
    ins.nargs(4)
    if len(ins.types) != 2:
        raise ins.fail("slct needs two types")
    t, ct = ins.types
    d, a, b, c = ins.dst(0), ins.src(1), ins.src(2), ins.src(3)

    def bind(env):
        w, ra, rb, rc = env.wr(d, t), env.rd(a, t), env.rd(b, t), env.rd(c, ct)
        dt = DTYPES[t]
        return lambda idx: w(idx, np.where(rc(idx) >= 0, ra(idx), rb(idx)).astype(dt, copy=False))
    return bind
