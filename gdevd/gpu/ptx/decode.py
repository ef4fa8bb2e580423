"""Instruction decoding: the registry of instruction families and shared helpers.

Each family module registers, per base opcode, a *decoder* ``decode(ins) -> binder``.  The
decoder runs once at load time, validates everything (types, modifiers, operand kinds) and
raises :class:`PtxError` naming the line; the returned ``binder(env)`` runs once per wave and
returns the closure ``run(idx)`` that the executor calls.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .errors import PtxError
from .ptxtypes import TYPE_NAMES
from .syntax import Imm, Instr, Not, Reg, Sink, Special, Sym, Vec

DECODERS: dict[str, Callable] = {}


def op(*names: str):
    """Register the decorated function as the decoder of the given base opcodes."""
    def deco(fn):
        for n in names:
            DECODERS[n] = fn
        return fn
    return deco


class Ins:
    """An instruction being decoded: base opcode, modifiers, types, operands, context."""

    def __init__(self, instr: Instr, ctx) -> None:
        parts = instr.opcode.split(".")
        self.instr = instr
        self.opcode = instr.opcode
        self.base = parts[0]
        self.mods = parts[1:]
        self.types = [m for m in self.mods if m in TYPE_NAMES]
        self.flags = {m for m in self.mods if m not in TYPE_NAMES}
        self.args = instr.args
        self.line = instr.line
        self.ctx = ctx

    def fail(self, msg: str) -> PtxError:
        """A PtxError for this instruction (to be raised by the caller)."""
        return PtxError(self.line, self.opcode, msg, self.ctx.module_name)

    def type(self, k: int = -1) -> str:
        """The ``k``-th type suffix; fails if the instruction has none."""
        if not self.types:
            raise self.fail("instruction without a type")
        return self.types[k]

    def nargs(self, *counts: int) -> None:
        """Fail unless the instruction has one of ``counts`` operands."""
        if len(self.args) not in counts:
            raise self.fail(f"expected {' or '.join(map(str, counts))} operands")

    def only(self, allowed: set[str]) -> None:
        """Fail if a non-type modifier outside ``allowed`` is present."""
        bad = self.flags - allowed
        if bad:
            raise self.fail(f"unsupported modifier .{sorted(bad)[0]}")

    def src(self, k: int):
        """Validated source operand ``k`` (register, immediate, special, symbol, !pred)."""
        a = self.args[k]
        if isinstance(a, Reg | Imm | Special | Not):
            return a
        if isinstance(a, Sym) and self.ctx.symbol_space(a.name) is not None:
            return a
        raise self.fail(f"unsupported source operand {a!r}")

    def dst(self, k: int = 0):
        """Validated destination operand ``k`` (register or sink)."""
        a = self.args[k]
        if isinstance(a, Reg | Sink):
            return a
        raise self.fail(f"destination must be a register, got {a!r}")


def regs_of(operand) -> list:
    """Operands inside a vector operand (or the operand itself as a one-element list)."""
    return list(operand.items) if isinstance(operand, Vec) else [operand]


def _fast(env, d, t_dst, srcs):
    """(destination view, fixed source values) if the all-lanes path needs no readers."""
    view = env.dst_view(d, t_dst)
    vals = [env.fixed(op, t) for op, t in srcs]
    if view is None or any(v is env._NOT_FIXED for v in vals):
        return None
    return view, vals


def unary(ins: Ins, fn, t_src: str, t_dst: str | None = None):
    """Binder of ``d = fn(a)``."""
    d, a = ins.dst(0), ins.src(1)
    t_dst = t_dst or t_src

    def bind(env):
        w, ra = env.wr(d, t_dst), env.rd(a, t_src)
        fast = _fast(env, d, t_dst, [(a, t_src)])
        if fast is None:
            return lambda idx: w(idx, fn(ra(idx)))
        view, (fa,) = fast

        def run(idx):
            if idx is None:
                view[...] = fn(fa)
            else:
                w(idx, fn(ra(idx)))
        return run
    return bind


def binary(ins: Ins, fn, t_src: str, t_dst: str | None = None, t_b: str | None = None):
    """Binder of ``d = fn(a, b)``."""
    d, a, b = ins.dst(0), ins.src(1), ins.src(2)
    t_dst = t_dst or t_src
    t_b = t_b or t_src

    def bind(env):
        w, ra, rb = env.wr(d, t_dst), env.rd(a, t_src), env.rd(b, t_b)
        fast = _fast(env, d, t_dst, [(a, t_src), (b, t_b)])
        if fast is None:
            return lambda idx: w(idx, fn(ra(idx), rb(idx)))
        view, (fa, fb) = fast

        def run(idx):
            if idx is None:
                view[...] = fn(fa, fb)
            else:
                w(idx, fn(ra(idx), rb(idx)))
        return run
    return bind


def ternary(ins: Ins, fn, t_src: str, t_dst: str | None = None, t_c: str | None = None,
            t_b: str | None = None):
    """Binder of ``d = fn(a, b, c)``."""
    d, a, b, c = ins.dst(0), ins.src(1), ins.src(2), ins.src(3)
    t_dst = t_dst or t_src
    t_b, t_c = t_b or t_src, t_c or t_src

    def bind(env):
        w = env.wr(d, t_dst)
        ra, rb, rc = env.rd(a, t_src), env.rd(b, t_b), env.rd(c, t_c)
        fast = _fast(env, d, t_dst, [(a, t_src), (b, t_b), (c, t_c)])
        if fast is None:
            return lambda idx: w(idx, fn(ra(idx), rb(idx), rc(idx)))
        view, (fa, fb, fc) = fast

        def run(idx):
            if idx is None:
                view[...] = fn(fa, fb, fc)
            else:
                w(idx, fn(ra(idx), rb(idx), rc(idx)))
        return run
    return bind


def nop(ins: Ins):
    """Binder of an instruction without architectural effect here (fences, hints)."""
    return lambda env: (lambda idx: None)


def as_array(v, n: int) -> np.ndarray:
    """``v`` (array or scalar) broadcast to length ``n``."""
    v = np.asarray(v)
    return v if v.shape == (n,) else np.broadcast_to(v, (n,))
