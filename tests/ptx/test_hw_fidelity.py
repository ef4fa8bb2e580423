"""Results read off a real GPU: each case is a PTX snippet with its operands and the bits an
NVIDIA H200 (driver 580, the PTX JIT-compiled by the driver) returned on 2026-11-26, where
the engines had differed from it.  Both engines must give the same bits (conftest runs every
case on each).  The sweep that found them is described in docs/ptx-engine.md."""

from __future__ import annotations

import numpy as np
import pytest

from .isa import run_snippet

F, D = "mov.b32 %f0, %x0; mov.b32 %f1, %x1;", "mov.b64 %fd0, %x0; mov.b64 %fd1, %x1;"

CASES = [
    # directed rounding of a sum whose exact value a float64 cannot hold
    (F + "add.rz.f32 %f2, %f0, %f1; mov.b32 %y, %f2;", "b32", [0xA3849150, 0x42FDCCCD],
     0x42FDCCCC),
    (F + "add.rm.f32 %f2, %f0, %f1; mov.b32 %y, %f2;", "b32", [0xC0EE3902, 0x76AD6167],
     0x76AD6166),
    (F + "add.rm.f32 %f2, %f0, %f1; mov.b32 %y, %f2;", "b32", [0x3F800000, 0xBF800000],
     0x80000000),                                                  # x + -x rounding down
    (F + "sub.rp.f32 %f2, %f0, %f1; mov.b32 %y, %f2;", "b32", [0x3F800000, 0x0DA24260],
     0x3F800000),
    # f64 directed modes (they were rounded to nearest)
    (D + "add.rz.f64 %fd2, %fd0, %fd1; mov.b64 %y, %fd2;", "b64",
     [0xC24590AAD7CF8BFB, 0x00250DCCAF4223BA], 0xC24590AAD7CF8BFA),
    (D + "div.rz.f64 %fd2, %fd0, %fd1; mov.b64 %y, %fd2;", "b64",
     [0x000012688B70E62B, 0xBF3675E3F40A8D5C], 0x804A3A11E2469EF3),   # a subnormal dividend
    (D + "sqrt.rz.f64 %fd2, %fd0; mov.b64 %y, %fd2;", "b64", [0x000012688B70E62B, 0],
     0x1FC1297872D9CBAD),
    ("cvt.rz.f64.u64 %fd0, %x0; mov.b64 %y, %fd0;", "b64", [0xB56E24289DEBB5EF, 0],
     0x43E6ADC48513BD76),
    # fma.f64: a zero product keeps IEEE's sign of zero; c = inf wins over an overflow
    (D + "mov.b64 %fd2, %x1; fma.rn.f64 %fd3, %fd0, %fd1, %fd2; mov.b64 %y, %fd3;", "b64",
     [0x271C9FC09440606F, 0x8000000000000000], 0x8000000000000000),
    # .sat clamps to +0; zeros are normal; .ftz comparisons flush subnormal operands
    (F + "mul.sat.f32 %f2, %f0, %f1; mov.b32 %y, %f2;", "b32", [0xC6837179, 0], 0),
    (F + "cvt.sat.f32.f32 %f2, %f0; mov.b32 %y, %f2;", "b32", [0x80000000, 0], 0),
    (F + "testp.normal.f32 %p0, %f0; selp.u32 %y, 1, 0, %p0;", "b32", [0x80000000, 0], 1),
    (F + "setp.lt.ftz.f32 %p0, %f0, %f1; selp.u32 %y, 1, 0, %p0;", "b32",
     [0x800116C2, 0x80000000], 0),
    # x % 0 is all ones, like x / 0
    ("rem.u32 %y, %x0, %x1;", "b32", [0xF02D2CCE, 0], 0xFFFFFFFF),
    ("rem.s32 %y, %x0, %x1;", "b32", [0x20, 0], 0xFFFFFFFF),
    ("rem.u64 %y, %x0, %x1;", "b64", [0x61, 0], 0xFFFFFFFFFFFFFFFF),
    # a NaN converted to an integer
    (F + "cvt.rzi.s64.f32 %rd0, %f0; mov.b64 %y, %rd0;", "b64", [0x7FC00000, 0],
     0x8000000000000000),
    (F + "cvt.rzi.s32.f32 %r3, %f0; cvt.u64.u32 %y, %r3;", "b64", [0x7FC00000, 0], 0),
    (D + "cvt.rzi.s32.f64 %r3, %fd0; cvt.u64.u32 %y, %r3;", "b64", [0x7FF8000000000000, 0],
     0x80000000),
    (D + "cvt.rzi.u8.f64 %rs3, %fd0; cvt.u64.u16 %y, %rs3;", "b64", [0xFFF8000000000000, 0],
     0x80),
    # the carry flag is the adder's: subc after an addc that carried nothing borrows one
    ("add.cc.u32 %r0, %x0, %x0; addc.cc.u32 %r1, %x0, %x1; subc.u32 %y, %r1, %r0;", "b32",
     [0, 0xFFFFFFFF], 0xFFFFFFFE),
    ("sub.cc.u32 %r0, %x0, %x1; subc.u32 %y, %x1, %x0;", "b32", [1, 2], 0),
]


@pytest.mark.parametrize("body,t,operands,want", CASES, ids=[c[0][-60:] for c in CASES])
def test_engines_give_the_bits_a_real_gpu_gives(body, t, operands, want):
    dt = np.uint32 if t == "b32" else np.uint64
    xs = [np.full(4, v, dt) for v in operands]
    got = run_snippet(body, [(t, xs[0]), (t, xs[1])], t, block=4)
    assert [int(v) for v in got] == [want] * 4


def test_tf32_of_a_nan_is_truncated_as_a_real_gpu_does():
    x = np.array([0x7FFABAB4, 0xFFE9CF18, 0x7F828E00], np.uint32)
    got = run_snippet("cvt.rna.tf32.f32 %r0, %x0; mov.b32 %y, %r0;", [("u32", x)], "u32",
                      block=3)
    assert [hex(v) for v in got] == ["0x7ffaa000", "0xffe9c000", "0x7f828000"]
