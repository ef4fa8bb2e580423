"""Translation of packed ``.f16x2`` arithmetic: each half as the scalar f16 form.

The interpreter lifts its float16 functions over the two halves of a b32 (``ops_float.paired``);
here each half is unpacked to a float (``H2F``), computed as the scalar translators compute
``.f16``, and rounded back once (``F2H``).  Other instructions keep their translators.
"""

from __future__ import annotations

from .arith import TRANSLATORS, only, tr
from .operands import Unsupported

_plain = {k: TRANSLATORS[k] for k in ("add", "sub", "mul", "fma", "mad", "neg", "abs",
                                      "min", "max", "cvt")}
# of two zeros, +0.0 > -0.0 (the PTX ISA's rule)
_MIN = "({1} < {0} || ({1} == {0} && signbit({1})) ? {1} : {0})"
_MAX = "({1} > {0} || ({1} == {0} && !signbit({1})) ? {1} : {0})"
_BIN = {"add": "({0} + {1})", "sub": "({0} - {1})", "mul": "({0} * {1})",
        "min": "(isnan({1}) ? {0} : isnan({0}) ? {1} : " + _MIN + ")",
        "max": "(isnan({1}) ? {0} : isnan({0}) ? {1} : " + _MAX + ")"}
_NAN = {"min": "(isnan({0}) ? {0} : isnan({1}) ? {1} : " + _MIN + ")",
        "max": "(isnan({0}) ? {0} : isnan({1}) ? {1} : " + _MAX + ")"}
_UN = {"neg": "(-{0})", "abs": "fabsf({0})"}
_FMA = "((double){0} * (double){1} + (double){2})"


def _half(v: str, k: int) -> str:
    return f"H2F((uint16_t)({v} >> {16 * k}))"


@tr("add", "sub", "mul", "fma", "mad", "neg", "abs", "min", "max")
def t_half2(ins, ops) -> str:
    """``.f16x2`` forms of add/sub/mul/fma/mad/neg/abs/min/max; others as before."""
    if ins.base == "fma" and ins.types in (["bf16"], ["bf16x2"]):
        return _fma_bf16(ins, ops)
    if ins.types != ["f16x2"]:
        return _plain[ins.base](ins, ops)
    only(ins, {"rn", "ftz"} if ins.base not in ("min", "max") else {"ftz", "NaN"})
    if ins.base in ("add", "sub", "mul", "min", "max"):
        form, n = (_NAN if "NaN" in ins.flags else _BIN)[ins.base], 2
    elif ins.base in _UN:
        form, n = _UN[ins.base], 1
    elif ins.base in ("fma", "mad"):
        form, n = _FMA, 3
    else:
        raise Unsupported(f"{ins.base}.f16x2")
    src = [ops.rd(a, "b32") for a in ins.args[1:1 + n]]
    vals = ", ".join(f"v{k}_ = {s}" for k, s in enumerate(src))
    halves = [form.format(*(_half(f"v{j}_", k) for j in range(n))) for k in (0, 1)]
    res = f"((uint32_t)F2H({halves[0]}) | ((uint32_t)F2H({halves[1]}) << 16))"
    return f"{{ uint32_t {vals}; {ops.wr(ins.args[0], 'b32', res)} }}"


@tr("cvt")
def t_cvt_f16x2(ins, ops) -> str:
    """cvt.rn[.relu].f16x2.f32 d, a, b (a to the upper half, b to the lower, each rounded
    once; .relu: negative -> 0, NaN -> 0x7FFF, as ``ops_cvt``); other cvt forms as before."""
    if "bf16" in ins.types or ins.types[:1] == ["bf16x2"]:
        return _cvt_bf16(ins, ops)
    if ins.types != ["f16x2", "f32"]:
        return _plain["cvt"](ins, ops)
    only(ins, {"rn", "relu"})
    if "rn" not in ins.flags:
        raise Unsupported("cvt.f16x2.f32 without .rn")
    relu = "relu" in ins.flags
    parts = []
    for k, a in ((1, ins.args[1]), (0, ins.args[2])):
        h = f"F2H((double){ops.rd(a, 'f32')})"
        if relu:
            h = f"__extension__({{ uint16_t h_ = {h}; (h_ & 0x7FFF) > 0x7C00 ? 0x7FFF : " \
                f"(h_ & 0x8000) && (h_ & 0x7FFF) ? 0 : h_; }})"
        parts.append(f"((uint32_t)({h}) << {16 * k})")
    return ops.wr(ins.args[0], "b32", f"({parts[0]} | {parts[1]})")


def _fma_bf16(ins, ops) -> str:
    """fma.rn[.relu].bf16[x2]: a * b + c in double, rounded once by f2bf (ptx/bf16.py)."""
    only(ins, {"rn", "relu"})
    if "rn" not in ins.flags:
        raise Unsupported("fma.bf16 without .rn")
    relu = int("relu" in ins.flags)
    if ins.types == ["bf16"]:
        a, b, c = (f"(double)bf2f({ops.rd(x, 'b16')})" for x in ins.args[1:4])
        return ops.wr(ins.args[0], "b16", f"f2bf({a} * {b} + {c}, {relu})")
    src = [ops.rd(x, "b32") for x in ins.args[1:4]]
    vals = ", ".join(f"v{k}_ = {v}" for k, v in enumerate(src))
    halves = []
    for k in (0, 1):
        a, b, c = (f"(double)bf2f((uint16_t)(v{j}_ >> {16 * k}))" for j in range(3))
        halves.append(f"((uint32_t)f2bf({a} * {b} + {c}, {relu}) << {16 * k})")
    return f"{{ uint32_t {vals}; {ops.wr(ins.args[0], 'b32', ' | '.join(halves))} }}"


def _cvt_bf16(ins, ops) -> str:
    """cvt.{rn,rz}[.relu].bf16.f32, cvt.{rn,rz}[.relu].bf16x2.f32 (a to the upper half),
    cvt.f32.bf16."""
    if ins.types == ["f32", "bf16"]:
        only(ins, set())
        return ops.wr(ins.args[0], "f32", f"bf2f({ops.rd(ins.args[1], 'b16')})")
    if ins.types not in (["bf16", "f32"], ["bf16x2", "f32"]):
        raise Unsupported(f"cvt.{'.'.join(ins.types)}")
    only(ins, {"rn", "rz", "relu"})
    if len(ins.flags & {"rn", "rz"}) != 1:
        raise Unsupported("cvt to bf16 without one of .rn and .rz")
    relu = int("relu" in ins.flags)
    fn, cast = ("f2bf_rz", "(float)") if "rz" in ins.flags else ("f2bf", "(double)")
    if ins.types[0] == "bf16":
        return ops.wr(ins.args[0], "b16", f"{fn}({cast}{ops.rd(ins.args[1], 'f32')}, {relu})")
    hi, lo = (f"(uint32_t){fn}({cast}{ops.rd(a, 'f32')}, {relu})" for a in ins.args[1:3])
    return ops.wr(ins.args[0], "b32", f"(({hi} << 16) | {lo})")
