"""Random PTX programs for the differential test: a hypothesis strategy and the renderer.

A program is a list of steps over eight u32 registers ``%r0..%r7`` and four f32 registers
``%f0..%f3``: integer and float arithmetic (including the .approx functions and fma),
conversions, divergent if/else, loops with per-thread trip counts (at most 7 per level),
a shared-memory exchange between two ``bar.sync`` phases, warp shuffles, commutative
global atomics (each kind on its own counters, so that their order cannot matter), and a
store to an unmapped address taken by the threads whose data says so
(a fault).  Barriers and shuffles only appear where every thread of the block runs them.
The kernel stores every register of every thread, so any difference shows in memory.
Float bits never flow into the integer registers: when two NaN operands meet, the sign and
payload of the result depend on the operand order the C compiler picks (a real GPU returns
a canonical NaN), so the test compares float registers that are NaN on both engines as
equal (see docs/ptx-engine.md, Known gaps).
"""

from __future__ import annotations

import itertools

from hypothesis import strategies as st

INT_OPS = ["add.u32", "sub.u32", "mul.lo.u32", "mul.hi.s32", "and.b32", "or.b32", "xor.b32",
           "shl.b32", "shr.u32", "shr.s32", "min.s32", "max.u32", "rem.u32", "div.s32",
           "mul24.lo.u32"]
INT_UN = ["brev.b32", "popc.b32", "clz.b32", "not.b32", "bfind.s32"]
F_BIN = ["add.f32", "sub.rz.f32", "mul.f32", "div.rn.f32", "div.approx.f32", "div.full.f32",
         "min.f32", "max.f32", "add.ftz.f32"]
F_UN = ["sqrt.rn.f32", "sqrt.approx.f32", "rcp.approx.f32", "rsqrt.approx.f32",
        "ex2.approx.f32", "lg2.approx.f32", "sin.approx.f32", "cos.approx.f32",
        "tanh.approx.f32", "abs.f32", "neg.f32"]
ATOMS = ["add.u32", "max.u32", "min.u32", "or.b32", "xor.b32", "and.b32"]
SHFL = ["up", "down", "bfly", "idx"]

reg = st.integers(0, 7)
freg = st.integers(0, 3)


def _simple():
    return st.one_of(
        st.tuples(st.just("int"), st.sampled_from(INT_OPS), reg, reg, reg),
        st.tuples(st.just("iun"), st.sampled_from(INT_UN), reg, reg),
        st.tuples(st.just("bfe"), st.sampled_from(["u32", "s32"]), reg, reg, reg),
        st.tuples(st.just("carry"), reg, reg, reg),
        st.tuples(st.just("fbin"), st.sampled_from(F_BIN), freg, freg, freg),
        st.tuples(st.just("fun"), st.sampled_from(F_UN), freg, freg),
        st.tuples(st.just("fma"), freg, freg, freg, freg),
        st.tuples(st.just("i2f"), freg, reg), st.tuples(st.just("f2i"), reg, freg),
        st.tuples(st.just("atom"), st.sampled_from(ATOMS), reg, reg),
        st.tuples(st.just("fault"), reg, st.integers(0, 255)))


@st.composite
def steps(draw, depth: int = 0, uniform: bool = True):
    """A list of steps; nested ones at ``depth``; ``uniform`` when all threads run them."""
    kinds = ["simple"] * 6 + (["if", "loop"] if depth < 2 else [])
    if uniform:
        kinds += ["bar", "shfl"]
    out = []
    for _ in range(draw(st.integers(1, 6 if depth == 0 else 3))):
        kind = draw(st.sampled_from(kinds))
        if kind == "simple":
            out.append(draw(_simple()))
        elif kind == "if":
            out.append(("if", draw(reg), draw(reg), draw(steps(depth + 1, False)),
                        draw(steps(depth + 1, False))))
        elif kind == "loop":
            out.append(("loop", draw(reg), draw(steps(depth + 1, False))))
        elif kind == "bar":
            out.append(("bar", draw(reg), draw(reg), draw(st.integers(1, 63))))
        else:
            out.append(("shfl", draw(st.sampled_from(SHFL)), draw(reg), draw(reg),
                        draw(st.integers(0, 31))))
    return out


HEAD = """.version 7.5
.target sm_75
.address_size 64
.visible .entry k(.param .u64 inp, .param .u64 out, .param .u64 cnt)
{
.reg .pred %p<4>; .reg .b32 %r<8>; .reg .f32 %f<4>; .reg .b32 %t<4>; .reg .b32 %c<3>;
.reg .b32 %gid; .reg .b64 %a<4>;
.shared .align 4 .b32 sh[64];
mov.u32 %t0, %tid.x; mov.u32 %t1, %ctaid.x; mov.u32 %t2, %ntid.x;
mad.lo.u32 %gid, %t1, %t2, %t0;
ld.param.u64 %a0, [inp]; mul.wide.u32 %a1, %gid, 16; add.u64 %a0, %a0, %a1;
ld.global.u32 %r0, [%a0]; ld.global.u32 %r1, [%a0+4]; ld.global.u32 %r2, [%a0+8];
ld.global.u32 %r3, [%a0+12]; mov.u32 %r4, %tid.x; mov.b32 %r5, 0x9e3779b9;
mov.u32 %r6, %ctaid.x; mov.b32 %r7, 12345;
mov.b32 %f0, %r0; cvt.rn.f32.u32 %f1, %r1; cvt.rn.f32.s32 %f2, %r2; mov.b32 %f3, %r3;
"""
TAIL = """ld.param.u64 %a0, [out]; mul.wide.u32 %a1, %gid, 48; add.u64 %a0, %a0, %a1;
st.global.v4.u32 [%a0], {%r0, %r1, %r2, %r3}; st.global.v4.u32 [%a0+16], {%r4, %r5, %r6, %r7};
st.global.v4.f32 [%a0+32], {%f0, %f1, %f2, %f3};
ret;
}
"""


def _render(prog, out: list[str], labels, depth: int = 0) -> None:
    for s in prog:
        kind = s[0]
        if kind == "int":
            _, op, d, a, b = s
            out.append(f"{op} %r{d}, %r{a}, %r{b};")
        elif kind == "iun":
            _, op, d, a = s
            out.append(f"{op} %r{d}, %r{a};")
        elif kind == "bfe":
            _, t, d, a, b = s
            out.append(f"and.b32 %t0, %r{b}, 63; shr.u32 %t1, %r{b}, 8; and.b32 %t1, %t1, 63;"
                       f"bfe.{t} %r{d}, %r{a}, %t0, %t1;")
        elif kind == "carry":
            _, d, a, b = s
            out.append(f"add.cc.u32 %t0, %r{a}, %r{b}; addc.cc.u32 %t1, %r{b}, %r{d};"
                       f"subc.u32 %r{d}, %t1, %t0;")
        elif kind == "fbin":
            _, op, d, a, b = s
            out.append(f"{op} %f{d}, %f{a}, %f{b};")
        elif kind == "fun":
            _, op, d, a = s
            out.append(f"{op} %f{d}, %f{a};")
        elif kind == "fma":
            _, d, a, b, c = s
            out.append(f"fma.rn.f32 %f{d}, %f{a}, %f{b}, %f{c};")
        elif kind == "i2f":
            out.append(f"cvt.rn.f32.s32 %f{s[1]}, %r{s[2]};")
        elif kind == "f2i":
            out.append(f"cvt.rzi.s32.f32 %r{s[1]}, %f{s[2]};")
        elif kind == "atom":
            _, op, a, b = s
            base = 32 * ATOMS.index(op)   # each op its own counters: they commute
            out.append(f"ld.param.u64 %a2, [cnt]; and.b32 %t0, %r{a}, 7; mul.wide.u32 %a3, "
                       f"%t0, 4; add.u64 %a2, %a2, %a3; atom.global.{op} %t1, [%a2+{base}], "
                       f"%r{b};")
        elif kind == "fault":
            _, a, v = s
            n = next(labels)
            out.append(f"and.b32 %t0, %r{a}, 255; setp.ne.u32 %p2, %t0, {v}; @%p2 bra $S{n};"
                       f"mov.u64 %a2, 16; st.global.u32 [%a2], %r{a};\n$S{n}:")
        elif kind == "if":
            _, a, b, then, other = s
            n = next(labels)
            out.append(f"setp.lt.u32 %p1, %r{a}, %r{b}; @%p1 bra $T{n};")
            _render(other, out, labels, depth + 1)
            out.append(f"bra.uni $E{n};\n$T{n}:")
            _render(then, out, labels, depth + 1)
            out.append(f"$E{n}:")
        elif kind == "loop":
            _, a, body = s
            n = next(labels)
            out.append(f"and.b32 %c{depth}, %r{a}, 7;\n$L{n}:\nsetp.eq.u32 %p3, %c{depth}, 0;"
                       f"@%p3 bra $X{n};")
            _render(body, out, labels, depth + 1)
            out.append(f"sub.u32 %c{depth}, %c{depth}, 1; bra.uni $L{n};\n$X{n}:")
        elif kind == "bar":
            _, d, a, k = s
            out.append(f"mov.u32 %t0, %tid.x; shl.b32 %t1, %t0, 2; mov.u64 %a2, sh; "
                       f"cvt.u64.u32 %a3, %t1; add.u64 %a3, %a2, %a3; st.shared.u32 [%a3], "
                       f"%r{a}; bar.sync 0; add.u32 %t0, %t0, {k}; and.b32 %t0, %t0, 63; "
                       f"shl.b32 %t1, %t0, 2; cvt.u64.u32 %a3, %t1; add.u64 %a3, %a2, %a3; "
                       f"ld.shared.u32 %r{d}, [%a3]; bar.sync 0;")
        else:
            _, mode, d, a, b = s
            c = 0 if mode == "up" else 0x1F
            out.append(f"shfl.sync.{mode}.b32 %r{d}, %r{a}, {b}, {c}, -1;")


def render(prog) -> str:
    """The PTX text of kernel ``k(inp, out, cnt)`` running ``prog`` (see the docstring)."""
    out: list[str] = []
    _render(prog, out, itertools.count())
    return HEAD + "\n".join(out) + "\n" + TAIL
