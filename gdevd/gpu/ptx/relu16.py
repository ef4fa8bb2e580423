"""Lowering of sm_80's ``fma.rn.relu.f16[x2]`` (``__hfma_relu`` of ``__half``): the fused
result (``fma.rn.f16``), then a negative value becomes +0 and a NaN the canonical f16 NaN
(0x7FFF), as the PTX ISA defines ``.relu``; ``x2`` per half."""

from __future__ import annotations

from .errors import PtxError
from .syntax import Function, Imm, Instr, Reg, Vec


def is_relu16(s: Instr) -> bool:
    """Whether ``s`` is an f16 ``fma`` with ``.relu`` (lowered here)."""
    base, *mods = s.opcode.split(".")
    return base == "fma" and "relu" in mods and ("f16" in mods or "f16x2" in mods)


def lower_relu16(fn: Function, s: Instr, new, name: str) -> list:
    """The instructions doing ``s``; ``new`` (lower.py's Fresh) makes its registers."""
    mods = s.opcode.split(".")[1:]
    x2 = "f16x2" in mods
    if set(mods) != {"rn", "relu", "f16x2" if x2 else "f16"} or len(s.args) != 4:
        raise PtxError(s.line, s.opcode, "unsupported f16 fma.relu form", name)
    line, t = s.line, "f16x2" if x2 else "f16"
    r = new.reg("b32" if x2 else "b16")
    out = [Instr(f"fma.rn.{t}", [r, *s.args[1:]], line)]
    if not x2:
        return [*out, *_relu(r, r, new, line), Instr("mov.b16", [s.args[0], r], line, s.guard)]
    lo, hi = new.reg("b16"), new.reg("b16")
    out += [Instr("mov.b32", [Vec((lo, hi)), r], line), *_relu(lo, lo, new, line),
            *_relu(hi, hi, new, line)]
    return [*out, Instr("mov.b32", [s.args[0], Vec((lo, hi))], line, s.guard)]


def _relu(d: Reg, x: Reg, new, line: int) -> list:
    neg, nan = new.reg("pred"), new.reg("pred")
    return [Instr("setp.lt.f16", [neg, x, Imm(0)], line),
            Instr("setp.nan.f16", [nan, x, x], line),
            Instr("selp.b16", [d, Imm(0), x, neg], line),
            Instr("selp.b16", [d, Imm(0x7FFF), d, nan], line)]
