"""Lowering of 16-bit atomics into a compare-and-swap loop on their aligned 32-bit word.

``atom``/``red`` ``.add.noftz`` on ``.f16``, ``.f16x2``, ``.bf16``, ``.bf16x2`` (CUDA's
``atomicAdd`` of ``__half``, ``__half2``, ``__nv_bfloat16``) and ``atom.cas.b16``
(``atomicCAS`` of ``unsigned short``, which nvcc's own bf16 atomics use below sm_90) become::

        word = addr & ~3; shift = (addr & 2) * 8        (the x2 types: the word itself)
    L:  old = ld.b32 [word]
        half = (old >> shift) & 0xffff
        new  = half op b  (add.rn.f16[x2], fma.rn.bf16[x2] x*1+b; cas: b if half == cmp)
        prev = atom.cas.b32 [word], old, old with the half replaced by new
        if prev != old: goto L
        d = half                                          (the value before, as ``atom``)

in the instruction's state space, so each lane's update is one atomic step of some
serialization, as the PTX memory model requires; a guarded instruction runs behind a branch
on its guard.  The rounding is the arithmetic instruction's (round to nearest even, no flush
of subnormals: ``.noftz``).  A misaligned address faults at the load.
"""

from __future__ import annotations

from .errors import PtxError
from .syntax import Addr, Function, Imm, Instr, Label, Reg, Sym

TYPES = ("f16", "f16x2", "bf16", "bf16x2")
_ONE = {"bf16": 0x3F80, "bf16x2": 0x3F803F80}


def is_atom16(s: Instr) -> bool:
    """Whether ``s`` is a 16-bit atomic this module lowers."""
    base, *mods = s.opcode.split(".")
    if base not in ("atom", "red"):
        return False
    return ("add" in mods and any(t in mods for t in TYPES)) or \
        ("cas" in mods and "b16" in mods)


def lower_atom16(fn: Function, s: Instr, names, name: str) -> list:
    """The loop doing ``s``; ``names`` (lower.py's Fresh) makes its registers and labels.
    PtxError for a form outside the module docstring's."""
    base, *mods = s.opcode.split(".")
    cas = "cas" in mods
    t = "b16" if cas else next(m for m in mods if m in TYPES)
    space = next((m for m in mods if m in ("global", "shared")), "")
    known = {"add", "cas", "noftz", t, space, "", "relaxed", "gpu", "sys", "cta"}
    if set(mods) - known or (base == "red" and cas):
        raise PtxError(s.line, s.opcode, "unsupported 16-bit atomic form", name)
    want = (4 if cas else 3) if base == "atom" else 2
    if len(s.args) != want or not isinstance(s.args[1 if base == "atom" else 0], Addr):
        raise PtxError(s.line, s.opcode, "malformed 16-bit atomic", name)
    ops = s.args[2:] if base == "atom" else s.args[1:]
    at = s.args[1] if base == "atom" else s.args[0]
    sp = f".{space}" if space else ""
    wide, out = t.endswith("x2"), list[Instr | Label]()
    word = _address(fn, at, names, out, s.line, name)
    shift = names.reg("b32")
    if wide:
        out.append(Instr("mov.b32", [shift, Imm(0)], s.line))
    else:
        low = names.reg("b32")
        out += [Instr(f"cvt.u32.u{_width(fn, word)}", [low, word], s.line),
                Instr("and.b32", [low, low, Imm(2)], s.line),
                Instr("shl.b32", [shift, low, Imm(3)], s.line),
                Instr(f"and.b{_width(fn, word)}", [word, word, Imm(~3 & ((1 << 64) - 1))],
                      s.line)]
    loop, done = names.label(), names.label()
    old, new, prev, half = (names.reg("b32") for _ in range(4))
    p = names.reg("pred")
    out += [Label(loop, s.line), Instr(f"ld{sp}.b32", [old, Addr(word, 0)], s.line),
            Instr("shr.b32", [half, old, shift], s.line)]
    out += _update(t, cas, half, new, ops, names, s.line)
    if not wide:
        keep = names.reg("b32")
        out += [Instr("and.b32", [new, new, Imm(0xFFFF)], s.line),
                Instr("shl.b32", [new, new, shift], s.line),
                Instr("mov.b32", [keep, Imm(0xFFFF)], s.line),
                Instr("shl.b32", [keep, keep, shift], s.line),
                Instr("not.b32", [keep, keep], s.line),
                Instr("and.b32", [keep, old, keep], s.line),
                Instr("or.b32", [new, new, keep], s.line)]
    out += [Instr(f"atom{sp}.cas.b32", [prev, Addr(word, 0), old, new], s.line),
            Instr("setp.ne.b32", [p, prev, old], s.line),
            Instr("bra", [Sym(loop)], s.line, (p.name, False))]
    if base == "atom":
        out.append(Instr("mov.b32" if wide else "cvt.u16.u32", [s.args[0], half], s.line))
    if s.guard is not None:
        reg, neg = s.guard
        out = [Instr("bra", [Sym(done)], s.line, (reg, not neg)), *out]
    out.append(Label(done, s.line))
    return out


def _update(t: str, cas: bool, half: Reg, new: Reg, ops: list, names, line: int) -> list:
    """``new`` = the updated value of ``half`` (its low 16 bits, or all 32 for x2)."""
    if cas:
        cmp16, val = names.reg("b16"), names.reg("b16")
        p, got = names.reg("pred"), names.reg("b16")
        return [Instr("cvt.u16.u32", [got, half], line), Instr("mov.b16", [cmp16, ops[0]], line),
                Instr("mov.b16", [val, ops[1]], line),
                Instr("setp.eq.b16", [p, got, cmp16], line),
                Instr("selp.b16", [got, val, got, p], line),
                Instr("cvt.u32.u16", [new, got], line)]
    if t.endswith("x2"):
        b = ops[0]
        if t == "f16x2":
            return [Instr("add.rn.f16x2", [new, half, b], line)]
        one = names.reg("b32")
        return [Instr("mov.b32", [one, Imm(_ONE[t])], line),
                Instr("fma.rn.bf16x2", [new, half, one, b], line)]
    h16, r16 = names.reg("b16"), names.reg("b16")
    out = [Instr("cvt.u16.u32", [h16, half], line)]
    if t == "f16":
        out.append(Instr("add.rn.f16", [r16, h16, ops[0]], line))
    else:
        one = names.reg("b16")
        out += [Instr("mov.b16", [one, Imm(_ONE[t])], line),
                Instr("fma.rn.bf16", [r16, h16, one, ops[0]], line)]
    return out + [Instr("cvt.u32.u16", [new, r16], line)]


def _address(fn: Function, at: Addr, names, out: list, line: int, name: str) -> Reg:
    """A fresh register holding the address of ``at`` (64-bit, or 32-bit like its base)."""
    base = at.base
    if isinstance(base, Reg) and fn.regs.get(base.name) in ("b32", "u32", "s32"):
        reg = names.reg("b32")
        out.append(Instr("add.u32", [reg, base, Imm(at.offset)], line))
        return reg
    reg = names.reg("b64")
    if isinstance(base, Reg):
        out.append(Instr("add.u64", [reg, base, Imm(at.offset)], line))
    elif isinstance(base, Sym):
        out += [Instr("mov.u64", [reg, base], line),
                Instr("add.u64", [reg, reg, Imm(at.offset)], line)]
    else:
        raise PtxError(line, "atom", "unsupported 16-bit atomic address", name)
    return reg


def _width(fn: Function, reg: Reg) -> int:
    return 32 if fn.regs.get(reg.name) == "b32" else 64
