"""Lowering of bf16 arithmetic to what the engines run exactly (``fma.rn.bf16[x2]``, f32).

sm_80's ``min``/``max``/``neg``/``abs`` and sm_90's ``add``/``sub``/``mul``/``setp``/``set``
on ``.bf16`` (and the ``x2`` forms: nvcc's ``__nv_bfloat16`` operators) become:

* ``add a, b`` = ``fma.rn a, 1, b``; ``sub a, b`` = ``fma.rn b, -1, a``; ``mul a, b`` =
  ``fma.rn a, b, -0``: each one rounding of the exact result, as the ISA defines them (the
  signs of zero results included);
* ``neg``/``abs``: the sign bit flipped or cleared;
* ``min``/``max{.NaN}`` and comparisons: through f32, where every bf16 is exact (a NaN result
  is the canonical bf16 NaN);
* ``set.cmp.bf16[x2].bf16[x2]``: 1.0 (0x3F80) or 0 (per half).

``x2`` forms work on the two halves.  Other bf16 forms stay refused at load (program.py).
"""

from __future__ import annotations

from .errors import PtxError
from .syntax import Function, Imm, Instr, Reg, Vec

_FMA = {"add": (0x3F80, "ab1"), "sub": (0xBF80, "sub"), "mul": (0x8000, "mul")}
_OPS = {"add", "sub", "mul", "neg", "abs", "min", "max", "setp", "set"}


def is_bf16_arith(s: Instr) -> bool:
    """Whether ``s`` is a bf16 instruction this module lowers."""
    base, *mods = s.opcode.split(".")
    return base in _OPS and ("bf16" in mods or "bf16x2" in mods)


def lower_bf16(fn: Function, s: Instr, new, name: str) -> list:
    """The instructions doing ``s``; ``new`` (lower.py's Fresh) makes its registers."""
    base, *mods = s.opcode.split(".")
    x2 = "bf16x2" in mods
    flags = set(mods) - {"bf16", "bf16x2", "rn"}
    line = s.line
    if base in ("add", "sub", "mul") and not flags:
        return _fma(base, x2, s, new)
    if base in ("neg", "abs") and not flags and len(s.args) == 2:
        mask = (0x8000 if base == "neg" else 0x7FFF) * (0x10001 if x2 else 1)
        w = "b32" if x2 else "b16"
        return [Instr(f"{'xor' if base == 'neg' else 'and'}.{w}", [s.args[0], s.args[1],
                                                                   Imm(mask)], line, s.guard)]
    if base in ("min", "max") and flags <= {"NaN"} and len(s.args) == 3:
        return _halves(x2, s, new, lambda d, a, b: _via_f32(
            f"{base}{'.NaN' if flags else ''}.f32", d, [a, b], new, line))
    if base == "setp" and not x2 and len(flags) == 1 and len(s.args) == 3:
        fa, fb = new.reg("f32"), new.reg("f32")
        return [*_to_f32(fa, s.args[1], line), *_to_f32(fb, s.args[2], line),
                Instr(f"setp.{flags.pop()}.f32", [s.args[0], fa, fb], line, s.guard)]
    if base == "set" and x2 and mods.count("bf16x2") == 2 and len(flags) == 1:
        cmp = flags.pop()
        return _halves(True, s, new, lambda d, a, b: _set_half(cmp, d, a, b, new, line))
    if base == "set" and not x2 and mods.count("bf16") == 2 and len(flags) == 1:
        fa, fb, p, r = new.reg("f32"), new.reg("f32"), new.reg("pred"), new.reg("b16")
        return [*_to_f32(fa, s.args[1], line), *_to_f32(fb, s.args[2], line),
                Instr(f"setp.{flags.pop()}.f32", [p, fa, fb], line),
                Instr("selp.b16", [r, Imm(0x3F80), Imm(0), p], line),
                Instr("mov.b16", [s.args[0], r], line, s.guard)]
    raise PtxError(line, s.opcode, f"{base} of bf16 is not supported in this form", name)


def _fma(base: str, x2: bool, s: Instr, new) -> list:
    const, shape = _FMA[base]
    w, t = ("b32", "bf16x2") if x2 else ("b16", "bf16")
    c = new.reg(w)
    a, b = s.args[1], s.args[2]
    srcs = {"ab1": [a, c, b], "sub": [b, c, a], "mul": [a, b, c]}[shape]
    return [Instr(f"mov.{w}", [c, Imm(const * (0x10001 if x2 else 1))], s.line),
            Instr(f"fma.rn.{t}", [s.args[0], *srcs], s.line, s.guard)]


def _halves(x2: bool, s: Instr, new, one) -> list:
    """``one(d, a, b)`` on the value (scalar) or on each half, then packed (x2)."""
    if not x2:
        r = new.reg("b16")
        return [*one(r, s.args[1], s.args[2]), Instr("mov.b16", [s.args[0], r], s.line,
                                                     s.guard)]
    out, res = [], []
    parts = []
    for src in s.args[1:3]:
        lo, hi = new.reg("b16"), new.reg("b16")
        out.append(Instr("mov.b32", [Vec((lo, hi)), src], s.line))
        parts.append((lo, hi))
    for k in (0, 1):
        r = new.reg("b16")
        out += one(r, parts[0][k], parts[1][k])
        res.append(r)
    return [*out, Instr("mov.b32", [s.args[0], Vec(tuple(res))], s.line, s.guard)]


def _set_half(cmp: str, d: Reg, a, b, new, line: int) -> list:
    """``d`` = 1.0 (0x3F80) if ``a cmp b`` else 0, compared in f32."""
    fa, fb, p = new.reg("f32"), new.reg("f32"), new.reg("pred")
    return [*_to_f32(fa, a, line), *_to_f32(fb, b, line),
            Instr(f"setp.{cmp}.f32", [p, fa, fb], line),
            Instr("selp.b16", [d, Imm(0x3F80), Imm(0), p], line)]


def _to_f32(f: Reg, src, line: int) -> list:
    return [Instr("cvt.f32.bf16", [f, src], line)]


def _via_f32(opcode: str, d: Reg, srcs: list, new, line: int) -> list:
    fs = [new.reg("f32") for _ in srcs]
    out = [i for f, src in zip(fs, srcs, strict=True) for i in _to_f32(f, src, line)]
    r = new.reg("f32")
    return [*out, Instr(opcode, [r, *fs], line), Instr("cvt.rn.bf16.f32", [d, r], line)]
