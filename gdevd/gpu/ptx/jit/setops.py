"""Translation of ``set`` (a comparison written as a value) to C.

``set.cmp[.bool].dtype.stype d, a, b[, c]`` writes 1.0 (float destinations) or all ones
(integer destinations) when the comparison, combined with ``c``, holds, else 0, as
``ops_cmp.dec_set``.  With ``.f16x2`` sources each half is compared on its own and writes
its own half of ``d``: 0xFFFF (integer destinations) or 1.0 in f16 (``.f16x2``);
``setp.f16x2 p|q`` sets p from the low halves and q from the high ones.
"""

from __future__ import annotations

from ..syntax import Pair, Sink
from .arith import _BOOL, TRANSLATORS, compare, tr
from .operands import UT, Unsupported, is_f, is_s, width

_plain_setp = TRANSLATORS["setp"]


def _combine(ins, ops, r: str) -> str:
    bops = [m for m in ins.mods if m in _BOOL]
    if not bops:
        return r
    return f"(({r}) {_BOOL[bops[0]]} ({ops.rd(ins.args[3], 'pred')}))"


def _true(dt: str) -> str:
    if is_f(dt):
        return "1.0"
    return "-1" if is_s(dt) else f"(({UT[width(dt)]})~0ull)"


@tr("set")
def t_set(ins, ops) -> str:
    """set with scalar sources (any destination) or ``.f16x2`` sources (see above)."""
    if len(ins.types) != 2:
        raise Unsupported("set types")
    dt, st = ins.types
    if st[0] == "b":
        st = "u" + st[1:]
    d, a, b = ins.args[:3]
    if st != "f16x2":
        r = _combine(ins, ops, compare(ins, st, ops.rd(a, st), ops.rd(b, st)))
        return ops.wr(d, dt, f"(({r}) ? {_true(dt)} : 0)")
    if dt not in ("u32", "s32", "b32", "f16x2"):
        raise Unsupported(f"set.{dt}.f16x2")
    one = "0x3C00u" if dt == "f16x2" else "0xFFFFu"
    halves = []
    for k in (0, 1):
        x, y = (f"H2F((uint16_t)(v{j}_ >> {16 * k}))" for j in (0, 1))
        halves.append(f"((({_combine(ins, ops, compare(ins, 'f16', x, y))}) ? {one} : 0u)"
                      f" << {16 * k})")
    res = f"({halves[0]} | {halves[1]})"
    return (f"{{ uint32_t v0_ = {ops.rd(a, 'b32')}, v1_ = {ops.rd(b, 'b32')}; "
            f"{ops.wr(d, 'b32', res)} }}")


@tr("setp")
def t_setp_f16x2(ins, ops) -> str:
    """setp.cmp[.bool].f16x2 p|q, a, b[, c] (see above); other setp forms as arith.py."""
    if ins.type() != "f16x2":
        return _plain_setp(ins, ops)
    dst = ins.args[0]
    p, q = (dst.first, dst.second) if isinstance(dst, Pair) else (dst, Sink())
    res = []
    for k in (0, 1):
        x, y = (f"H2F((uint16_t)(v{j}_ >> {16 * k}))" for j in (0, 1))
        res.append(_combine(ins, ops, compare(ins, "f16", x, y)))
    return (f"{{ uint32_t v0_ = {ops.rd(ins.args[1], 'b32')}, v1_ = {ops.rd(ins.args[2], 'b32')}; "
            f"int r0_ = {res[0]}, r1_ = {res[1]}; {ops.wr(p, 'pred', 'r0_')} "
            f"{ops.wr(q, 'pred', 'r1_')} }}")
