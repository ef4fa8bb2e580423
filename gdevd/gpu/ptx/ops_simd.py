"""Packed SIMD ("video") instructions on 4 bytes or 2 half-words of a b32, and fns.

``vop4/vop2.dtype.atype.btype{.sat|.add} d, a, b, c`` for vadd, vsub, vavrg, vabsdiff,
vmin, vmax and vset.cmp: each lane is computed in full precision from sign- or zero-
extended operands; ``.sat`` clamps to the lane range of ``dtype``; ``.add`` returns the sum
of the lanes plus ``c``; otherwise the lanes are packed (mask and lane selectors are not
supported and rejected by the parser's operand check).
"""

from __future__ import annotations

import numpy as np

from .decode import Ins, op, ternary

_OPS = {
    "vadd": np.add, "vsub": np.subtract,
    "vavrg": lambda a, b: (a + b + 1) >> 1,
    "vabsdiff": lambda a, b: np.abs(a - b),
    "vmin": np.minimum, "vmax": np.maximum,
}
_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
        "gt": np.greater, "ge": np.greater_equal}


def _lanes(v, width: int, count: int, signed: bool) -> list[np.ndarray]:
    u = np.asarray(v).astype(np.uint32).astype(np.int64)
    out = []
    for k in range(count):
        x = (u >> (width * k)) & ((1 << width) - 1)
        if signed:
            x = np.where(x >> (width - 1), x - (1 << width), x)
        out.append(x)
    return out


def simd(name: str, count: int, dt: str, at: str, bt: str, flags: set[str], cmp=None):
    """The function computing ``name`` on packed operands (see module docstring)."""
    width = 32 // count
    fn = _OPS.get(name)
    lo, hi = ((-(1 << width - 1), (1 << width - 1) - 1) if dt[0] == "s"
              else (0, (1 << width) - 1))

    def run(a, b, c):
        la = _lanes(a, width, count, at[0] == "s")
        lb = _lanes(b, width, count, bt[0] == "s")
        res = [cmp(x, y).astype(np.int64) if cmp is not None else fn(x, y)
               for x, y in zip(la, lb, strict=True)]
        if "sat" in flags:
            res = [np.clip(r, lo, hi) for r in res]
        if "add" in flags:
            total = np.asarray(c).astype(np.int64)
            for r in res:
                total = total + r
            return total.astype(np.uint64).astype(np.uint32)
        acc = np.zeros(np.broadcast(*res).shape, dtype=np.uint64)
        for k, r in enumerate(res):
            acc |= (np.asarray(r).astype(np.uint64) & np.uint64((1 << width) - 1)) << \
                np.uint64(width * k)
        return acc.astype(np.uint32)
    return run


def _decode(ins: Ins, count: int):
    name = ins.base[:-1]
    types = (["u32"] if name == "vset" else []) + ins.types
    if len(types) != 3:
        raise ins.fail("SIMD instructions need dtype.atype.btype (vset: atype.btype)")
    cmp = None
    if name == "vset":
        ops = [m for m in ins.mods if m in _CMP]
        if len(ops) != 1:
            raise ins.fail("vset needs one comparison")
        cmp = _CMP[ops[0]]
        ins.only({ops[0], "add"})
    else:
        ins.only({"sat", "add"})
    ins.nargs(4)
    dt, at, bt = types
    fn = simd(name, count, dt, at, bt, set(ins.flags), cmp)
    return ternary(ins, fn, "b32", "b32")


@op(*(n + "4" for n in list(_OPS) + ["vset"]))
def dec_simd4(ins: Ins):
    """Decoder of ``4``/``vset`` (see the module docstring)."""
    return _decode(ins, 4)


@op(*(n + "2" for n in list(_OPS) + ["vset"]))
def dec_simd2(ins: Ins):
    """Decoder of ``2``/``vset`` (see the module docstring)."""
    return _decode(ins, 2)


@op("fns")
def dec_fns(ins: Ins):
    """fns.b32 d, mask, base, offset: position of the offset-th set bit from base."""
    ins.nargs(4)
    d, m, b, o = ins.dst(0), ins.src(1), ins.src(2), ins.src(3)

    def fn(mask, base, offset):
        mask = np.asarray(mask).astype(np.int64)
        base = np.asarray(base).astype(np.int64) & 31
        offset = np.asarray(offset).astype(np.int64)
        shape = np.broadcast(mask, base, offset).shape
        result = np.full(shape, -1, np.int64)
        found = np.zeros(shape, bool)
        step = np.where(offset >= 0, 1, -1)
        count = np.abs(offset) - 1
        pos = np.broadcast_to(base, shape).copy()
        for _ in range(32):
            inside = (pos >= 0) & (pos < 32) & ~found & (offset != 0)
            bit = (mask >> np.clip(pos, 0, 31)) & 1
            hit = inside & (bit == 1)
            take = hit & (count == 0)
            result = np.where(take, pos, result)
            found |= take
            count = np.where(hit & ~take, count - 1, count)
            pos = pos + step
        zero = (offset == 0) & (((mask >> base) & 1) == 1)
        result = np.where(zero, base, result)
        return result.astype(np.uint64).astype(np.uint32)

    def bind(env):
        w = env.wr(d, "b32")
        rm, rb, ro = env.rd(m, "b32"), env.rd(b, "u32"), env.rd(o, "s32")
        return lambda idx: w(idx, fn(rm(idx), rb(idx), ro(idx)))
    return bind
