"""C expressions of PTX operands for the translator (one lane ``i`` at a time).

Every register is stored as an unsigned integer array of its declared width (predicates as
``uint8_t`` 0/1); reads and writes at another type follow the interpreter's views exactly
(:mod:`gdevd.gpu.ptx.state`): same width = the same bits, a narrower read truncates, a wider
read extends by the *read* type's signedness, a narrower write extends by the written
type's signedness (floats as their bits), a wider write truncates.
"""

from __future__ import annotations

import math

import numpy as np

from ..ptxtypes import DTYPES, scalar
from ..syntax import Imm, Not, Reg, Sink, Special, Sym

CT = {"s8": "int8_t", "s16": "int16_t", "s32": "int32_t", "s64": "int64_t",
      "u8": "uint8_t", "u16": "uint16_t", "u32": "uint32_t", "u64": "uint64_t",
      "b8": "uint8_t", "b16": "uint16_t", "b32": "uint32_t", "b64": "uint64_t",
      "f32": "float", "f64": "double", "pred": "uint8_t",
      "f16": "float"}   # an f16 value is computed on as a float, stored as its 16 bits
UT = {1: "uint8_t", 2: "uint16_t", 4: "uint32_t", 8: "uint64_t"}
ST = {1: "int8_t", 2: "int16_t", 4: "int32_t", 8: "int64_t"}
WINDOWS = {"shared": 1 << 48, "local": 2 << 48, "param": 4 << 48}


class Unsupported(Exception):
    """The translator does not handle this construct: the module stays on the interpreter."""


def width(t: str) -> int:
    """Size in bytes of a translatable PTX type (Unsupported for bf16 and packed ones)."""
    if t not in CT:
        raise Unsupported(f"type .{t}")
    return DTYPES[t].itemsize


def is_f(t: str) -> bool:
    """True for the float types the translator handles."""
    return t in ("f16", "f32", "f64")


def is_s(t: str) -> bool:
    """True for the signed integer types."""
    return t[0] == "s"


def from_bits(expr: str, t: str) -> str:
    """``expr`` (an unsigned integer of t's width) reinterpreted as type ``t``."""
    if t == "f32":
        return f"U2F({expr})"
    if t == "f64":
        return f"U2D({expr})"
    if t == "f16":
        return f"H2F({expr})"
    return f"(({CT[t]})({expr}))"


def to_bits(expr: str, t: str) -> str:
    """The bits of a type-``t`` value as an unsigned integer of its width."""
    if t == "f32":
        return f"F2U({expr})"
    if t == "f64":
        return f"D2U({expr})"
    if t == "f16":
        return f"F2H({expr})"
    return f"(({UT[width(t)]})({expr}))"


def literal(value, t: str) -> str:
    """A C constant of PTX type ``t`` with the interpreter's conversion of ``value``."""
    v = scalar(value, t)
    if t == "pred":
        return "1" if bool(v) else "0"
    if t == "f16":
        return from_bits(f"{int(np.asarray(v).view(np.uint16)):#x}u", t)
    if t in ("f32", "f64"):
        f = float(v)
        suffix = "f" if t == "f32" else ""
        if math.isfinite(f):
            return f"({f.hex()}{suffix})"
        bits = int(np.asarray(v).view(np.uint32 if t == "f32" else np.uint64))
        return from_bits(f"{bits:#x}ull", t)
    u = int(np.asarray(v).view(DTYPES["u" + t[1:]]))
    return f"(({CT[t]}){u:#x}ull)"


class Operands:
    """Operand reads and writes of one kernel (register table, symbols, specials)."""

    def __init__(self, regs: dict[str, str], symbols: dict[str, tuple[str, int]],
                 param_size: int) -> None:
        self.regs = regs
        self.names = {name: f"R{k}" for k, name in enumerate(regs)}
        self.ctypes = ["uint8_t" if t == "pred" else UT[width(t)] for t in regs.values()]
        self.symbols = symbols
        self.param_size = param_size
        self.pvar_sizes: dict[str, int] = {}    # the .param variables' sizes (devrtops.py)
        self.consts: dict[str, int] = {}   # registers the current instruction reads as constants

    def reg(self, name: str) -> tuple[str, str]:
        """(C lvalue at lane i, declared type) of a register."""
        if name not in self.names:
            raise Unsupported(f"register {name}")
        return f"{self.names[name]}[i]", self.regs[name]

    def guard(self, guard: tuple[str, bool]) -> str:
        """C condition at lane i of an instruction's guard ``(predicate, negated)``."""
        lv, _ = self.reg(guard[0])
        return f"(!{lv})" if guard[1] else lv

    def rd(self, op, t: str) -> str:
        """C expression of operand ``op`` read as type ``t``."""
        width(t)
        if isinstance(op, Reg):
            return self._reg_read(op.name, t)
        if isinstance(op, Imm):
            return literal(op.value, t)
        if isinstance(op, Not):
            return f"(!{self.rd(op.operand, 'pred')})"
        if isinstance(op, Special):
            return f"(({CT[t]})({self.special(op.name)}))"
        if isinstance(op, Sym):
            return self.sym(op.name, op.offset, t)
        raise Unsupported(f"operand {op!r}")

    def _reg_read(self, name: str, t: str) -> str:
        lv, rt = self.reg(name)
        if name in self.consts:
            lv = f"(({UT[width(rt)]}){self.consts[name]:#x}ull)"
        if rt == "pred" or t == "pred":
            if rt == t:
                return lv
            raise Unsupported("predicate read as a value")
        rw, tw = width(rt), width(t)
        if rw == tw:
            return from_bits(lv, t)
        if rw > tw:
            return from_bits(f"({UT[tw]}){lv}", t)
        if is_f(t):
            raise Unsupported("narrow register read as a wider float")
        return f"(({CT[t]})({ST[rw]}){lv})" if is_s(t) else f"(({CT[t]}){lv})"

    def wr(self, op, t: str, expr: str) -> str:
        """C statement writing the type-``t`` value ``expr`` to operand ``op``."""
        if isinstance(op, Sink) or op is None:
            return ""
        if not isinstance(op, Reg):
            raise Unsupported(f"destination {op!r}")
        lv, rt = self.reg(op.name)
        if rt == "pred":
            return f"{lv} = ({expr}) != 0;"
        if t == "pred":
            raise Unsupported("predicate written to a value register")
        rw, tw = width(rt), width(t)
        bits = to_bits(expr, t)
        if rw <= tw:
            return f"{lv} = ({UT[rw]}){bits};"
        if is_s(t):
            return f"{lv} = ({UT[rw]})({ST[rw]})({ST[tw]}){bits};"
        return f"{lv} = ({UT[rw]}){bits};"

    def sym(self, name: str, offset: int, t: str) -> str:
        """Address of symbol ``name`` plus ``offset`` as type ``t``."""
        if name not in self.symbols:
            raise Unsupported(f"symbol {name}")
        space, addr = self.symbols[name]
        mask = (1 << 8 * width(t)) - 1
        if space == "global":
            return f"(({CT[t]})((c->data_base + {addr + offset}ull) & {mask:#x}ull))"
        if space == "pvar":
            raise Unsupported("address of a call parameter")
        return f"(({CT[t]}){(addr + offset) & mask:#x}ull)"

    @staticmethod
    def special(name: str) -> str:
        """C expression (integer) of a constant special register at lane i."""
        base, _, comp = name.partition(".")
        k = "xyz".index(comp) if comp else 0
        table = {
            "%tid": f"tid_{'xyz'[k]}[i]", "%ntid": f"c->ntid[{k}]",
            "%ctaid": f"c->ctaid[{k}]", "%nctaid": f"c->nctaid[{k}]",
            "%laneid": "(i & 31)", "%warpid": "(i >> 5)", "%nwarpid": "((n + 31) >> 5)",
            "%smid": "0", "%gridid": "0", "%nsmid": "1",
            "%dynamic_smem_size": "c->dyn_shared", "%total_smem_size": "c->shared_size",
            "%aggr_smem_size": "c->shared_size",
            # a launch is a grid of clusters of one CTA each, as the interpreter's
            "%clusterid": f"c->ctaid[{k}]", "%nclusterid": f"c->nctaid[{k}]",
            "%cluster_ctaid": "0", "%cluster_nctaid": "1", "%cluster_ctarank": "0",
            "%cluster_nctarank": "1", "%is_explicit_cluster": "0",
            "%lanemask_eq": "(1u << (i & 31))", "%lanemask_lt": "((1u << (i & 31)) - 1u)",
            "%lanemask_le": "((2u << (i & 31)) - 1u)",
            "%lanemask_gt": "(~((2u << (i & 31)) - 1u))",
            "%lanemask_ge": "(~((1u << (i & 31)) - 1u))",
            "%clock": "clock_ns()", "%clock64": "clock_ns()", "%clock_hi": "(clock_ns() >> 32)",
            "%globaltimer": "clock_ns()", "%globaltimer_lo": "clock_ns()",
            "%globaltimer_hi": "(clock_ns() >> 32)",
        }
        if base in ("%envreg1", "%envreg2"):   # the grid workspace (coop.py)
            return "(uint32_t)c->grid_ws" if base == "%envreg2" else \
                "(uint32_t)(c->grid_ws >> 32)"
        if base.startswith("%envreg"):
            return "0"      # as the interpreter's (state.py)
        if base not in table:
            raise Unsupported(f"special register {name}")
        return table[base]
