"""Register coalescing: far fewer arrays than nvcc's virtual registers, same results."""

from __future__ import annotations

import numpy as np

from gdevd.gpu.ptx.parser import parse
from gdevd.gpu.ptx.regalloc import coalesce, defs_uses
from gdevd.gpu.ptx.syntax import Addr, Instr, Pair, Reg, Vec

from .helpers import load
from .isa import run_snippet


def test_nvcc_kernels_need_few_arrays():
    info = load("mathlib").kernels["fmath"]
    declared = len(parse((load.__globals__["DATA"] / "mathlib.ptx").read_text())
                   .functions["fmath"].regs)
    assert declared > 500 and len(info.regs) < 60


def test_guarded_definition_keeps_the_old_value_alive():
    """If `@p mov %r2` killed %r2, %r4 could share its array and clobber the 7."""
    body = """mov.u32 %r2, 7;
    mov.u32 %r4, %x0;
    setp.lt.u32 %p1, %x0, 100;
    @%p1 mov.u32 %r2, 9;
    add.u32 %y, %r2, %r4;"""
    x = np.array([5, 500, 99, 100], np.uint32)
    got = run_snippet(body, [("u32", x)], "u32")
    assert got.tolist() == [14, 507, 108, 107]


def test_defs_and_uses():
    st = Instr("st.global.u32", [Addr(Reg("a")), Reg("b")], 1)
    assert defs_uses(st) == ([], ["a", "b"])
    ld = Instr("ld.global.v2.u32", [Vec((Reg("x"), Reg("y"))), Addr(Reg("a"), 4)], 1, ("p", 0))
    assert defs_uses(ld) == (["x", "y"], ["a", "p", "x", "y"])
    setp = Instr("setp.lt.s32", [Pair(Reg("p"), Reg("q")), Reg("a"), Reg("b")], 1)
    assert defs_uses(setp) == (["p", "q"], ["a", "b"])


def test_coalesce_keeps_interfering_registers_apart():
    code = [Instr("mov.u32", [Reg("a")], 1), Instr("mov.u32", [Reg("b")], 2),
            Instr("add.u32", [Reg("c"), Reg("a"), Reg("b")], 3),
            Instr("add.u32", [Reg("d"), Reg("c"), Reg("c")], 4)]
    new, regs = coalesce(code, {"a": "b32", "b": "b32", "c": "b32", "d": "b32"})
    names = [ins.args[0].name for ins in new]
    assert names[0] != names[1]                  # a and b are live together
    assert len(regs) == 2                        # c reuses a dead one, d too
