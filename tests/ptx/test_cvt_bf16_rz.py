"""``cvt.rz[.relu].bf16.f32`` and ``.bf16x2.f32`` (what ``__float2bfloat16_rz`` compiles to,
met in HeCBench's mxfp4) on both engines: the f32's top 16 bits, so a finite value never
rounds up (the largest f32 stays finite, where ``.rn`` gives infinity), a NaN is 0x7FFF and
``.relu`` sends negatives to +0."""

from __future__ import annotations

import numpy as np

from .isa import run_snippet

#                 f32 bits      .rz     .rn (for contrast: where they differ)
CASES = [(0x3F800000, 0x3F80),  # 1.0
         (0x3F80FFFF, 0x3F80),  # just below 1 + 2^-7: .rn rounds up to 0x3F81
         (0xBF80FFFF, 0xBF80),  # its negative: toward zero
         (0x7F7FFFFF, 0x7F7F),  # the largest f32: .rn overflows to infinity
         (0x7F800000, 0x7F80),  # +inf
         (0xFF800000, 0xFF80),  # -inf
         (0x7FC00001, 0x7FFF),  # a NaN: the canonical one
         (0x00017FFF, 0x0001),  # a subnormal keeps its top bits
         (0x80000000, 0x8000)]  # -0
F32 = np.array([c[0] for c in CASES], np.uint32)
RZ = [c[1] for c in CASES]


def test_cvt_rz_bf16_f32_truncates(engine):
    got = run_snippet("cvt.rz.bf16.f32 %rs9, %x0;\n\tmov.b32 %y, {%rs9, %rs9};",
                      [("b32", F32)], "u32", extra_regs=".reg .b16 %rs9;")
    assert (got & 0xFFFF).tolist() == RZ


def test_cvt_rz_relu_bf16_f32_clamps_negatives(engine):
    got = run_snippet("cvt.rz.relu.bf16.f32 %rs9, %x0;\n\tmov.b32 %y, {%rs9, %rs9};",
                      [("b32", F32)], "u32", extra_regs=".reg .b16 %rs9;")
    want = [0 if (f >> 31) and r != 0x7FFF and r != 0x8000 else r for f, r in CASES]
    assert (got & 0xFFFF).tolist() == want


def test_cvt_rz_bf16x2_f32_puts_a_in_the_upper_half(engine):
    b = np.roll(F32, 1)
    got = run_snippet("cvt.rz.bf16x2.f32 %y, %x0, %x1;", [("b32", F32), ("b32", b)], "u32")
    assert (got >> 16).tolist() == RZ
    assert (got & 0xFFFF).tolist() == np.roll(np.array(RZ), 1).tolist()
