"""Lowering of sm_90's packed 16-bit integer arithmetic into scalar 16-bit instructions.

PTX 8.0 gives ``add``, ``sub``, ``min`` and ``max`` the types ``.u16x2`` and ``.s16x2`` (and
``min``/``max`` a ``.relu`` form on ``.s16x2``): a 32-bit register holds two half-words and
half k of ``d`` is ``op(half k of a, half k of b)``, wrapping for add/sub, ``.relu`` turning
a negative result into 0.  nvcc emits them for ``__vadd2``-style intrinsics when it targets
sm_90 or later.  Each becomes: the halves of each source unpacked (``mov.b32 {lo, hi}``, or
split here for an immediate), two ``op.u16`` / ``op.s16``, the relu as ``max.s16 r, r, 0``,
and one ``mov.b32 d, {lo, hi}`` that carries the instruction's guard (the temporaries are
computed unguarded: reading registers has no effect).
"""

from __future__ import annotations

from .errors import PtxError
from .syntax import Function, Imm, Instr, Reg, Vec

PACKED = ("u16x2", "s16x2")
_OPS = ("add", "sub", "min", "max")


def is_packed16(s: Instr) -> bool:
    """Whether ``s`` has a packed 16-bit integer type (and is for :func:`lower_packed16`)."""
    return any(m in PACKED for m in s.opcode.split(".")[1:])


def lower_packed16(fn: Function, s: Instr, new, name: str) -> list:
    """The scalar instructions doing ``s``; ``new`` (lower.py's Fresh) makes its registers.
    Raises PtxError for a form the ISA does not have."""
    op, *mods = s.opcode.split(".")
    t = next(m for m in mods if m in PACKED)
    flags = set(mods) - {t}
    relu_ok = op in ("min", "max") and t == "s16x2"
    if op not in _OPS or flags - ({"relu"} if relu_ok else set()):
        raise PtxError(s.line, s.opcode, "unsupported packed 16-bit integer form", name)
    if len(s.args) != 3 or not isinstance(s.args[0], Reg):
        raise PtxError(s.line, s.opcode, "expected a destination register and two sources",
                       name)
    out: list = []
    halves = [_halves(fn, a, new, out, s, name) for a in s.args[1:]]
    scalar = t[:3]
    res = (new.reg(scalar), new.reg(scalar))
    for k in (0, 1):
        out.append(Instr(f"{op}.{scalar}", [res[k], halves[0][k], halves[1][k]], s.line))
        if "relu" in flags:
            out.append(Instr("max.s16", [res[k], res[k], Imm(0)], s.line))
    out.append(Instr("mov.b32", [s.args[0], Vec(res)], s.line, s.guard))
    return out


def _halves(fn: Function, a, new, out: list, s: Instr, name: str) -> tuple:
    if isinstance(a, Imm) and isinstance(a.value, int):
        v = a.value & 0xFFFFFFFF
        return Imm(v & 0xFFFF), Imm(v >> 16)
    if not isinstance(a, Reg) or fn.regs.get(a.name) in (None, "pred"):
        raise PtxError(s.line, s.opcode, "a packed 16-bit source must be a 32-bit register "
                       "or an integer", name)
    lo, hi = new.reg("b16"), new.reg("b16")
    out.append(Instr("mov.b32", [Vec((lo, hi)), a], s.line))
    return lo, hi
