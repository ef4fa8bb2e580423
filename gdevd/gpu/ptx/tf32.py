"""Lowering of sm_80's ``cvt.{rna,rn,rz}.tf32.f32 d, a`` (``wmma::__float_to_tf32``): the
f32 rounded to tf32's 10 fraction bits, kept as an f32 bit pattern whose low 13 bits are
zero, in integer instructions both engines run.  ``rna`` adds half a tf32 ulp to the
magnitude's bits (ties away from zero), ``rn`` half an ulp less one plus the kept lowest bit
(ties to even), ``rz`` only truncates; a carry into the exponent is the right rounding (up to
infinity past the largest tf32).  Infinities and NaNs are truncated in every mode (a real
GPU turns 0x7FFABAB4 into 0x7FFAA000)."""

from __future__ import annotations

from .errors import PtxError
from .syntax import Function, Imm, Instr


def is_tf32(s: Instr) -> bool:
    """Whether ``s`` is a ``cvt`` to ``.tf32`` (lowered here)."""
    base, *mods = s.opcode.split(".")
    return base == "cvt" and "tf32" in mods


def lower_tf32(fn: Function, s: Instr, new, name: str) -> list:
    """The instructions doing ``s``; ``new`` (lower.py's Fresh) makes its registers."""
    mods = s.opcode.split(".")[1:]
    if len(mods) != 3 or mods[0] not in ("rna", "rn", "rz") or mods[1:] != ["tf32", "f32"] \
            or len(s.args) != 2:
        raise PtxError(s.line, s.opcode, "unsupported cvt to tf32 (rna, rn or rz from f32)",
                       name)
    line = s.line
    bits, exp, up, out = (new.reg("b32") for _ in range(4))
    special = new.reg("pred")
    code = [Instr("mov.b32", [bits, s.args[1]], line),
            Instr("and.b32", [exp, bits, Imm(0x7F800000)], line),
            Instr("setp.eq.u32", [special, exp, Imm(0x7F800000)], line)]
    if mods[0] == "rna":
        code.append(Instr("add.u32", [up, bits, Imm(0x1000)], line))
    elif mods[0] == "rn":
        code += [Instr("shr.u32", [up, bits, Imm(13)], line),
                 Instr("and.b32", [up, up, Imm(1)], line),
                 Instr("add.u32", [up, up, Imm(0xFFF)], line),
                 Instr("add.u32", [up, bits, up], line)]
    else:
        code.append(Instr("mov.b32", [up, bits], line))
    cut = new.reg("b32")
    return code + [Instr("and.b32", [out, up, Imm(0xFFFFE000)], line),
                   Instr("and.b32", [cut, bits, Imm(0xFFFFE000)], line),
                   Instr("selp.b32", [s.args[0], cut, out, special], line, s.guard)]
