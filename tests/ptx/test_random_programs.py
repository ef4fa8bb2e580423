"""Random straight-line and branching integer programs against a Python interpreter model."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from .isa import run_snippet

M = (1 << 32) - 1


def s32(x: int) -> int:
    x &= M
    return x - (1 << 32) if x >> 31 else x


OPS = {
    "add.u32": lambda a, b: a + b, "sub.u32": lambda a, b: a - b,
    "mul.lo.u32": lambda a, b: a * b, "mul.hi.u32": lambda a, b: (a * b) >> 32,
    "and.b32": lambda a, b: a & b, "or.b32": lambda a, b: a | b, "xor.b32": lambda a, b: a ^ b,
    "shl.b32": lambda a, b: a << b if b < 32 else 0,
    "shr.u32": lambda a, b: a >> b if b < 32 else 0,
    "shr.s32": lambda a, b: s32(a) >> min(b, 31), "min.s32": lambda a, b: min(s32(a), s32(b)),
    "max.u32": max, "rem.u32": lambda a, b: a % b if b else 0xFFFFFFFF,
}

step = st.tuples(st.sampled_from(sorted(OPS) + ["selp", "loop"]), st.integers(0, 3),
                 st.integers(0, 3), st.integers(0, 3))


def render(prog) -> str:
    lines = ["mov.b32 %r0, %x0;", "mov.b32 %r1, %x1;", "mov.b32 %r2, 12345;", "mov.b32 %r3, %x0;"]
    for k, (op, d, a, b) in enumerate(prog):
        if op == "selp":
            lines.append(f"setp.lt.s32 %p1, %r{a}, %r{b}; selp.b32 %r{d}, %r{a}, %r{b}, %p1;")
        elif op == "loop":   # r{d} += r{a} repeated (r{b} & 7) times: per-thread trip counts
            lines.append(f"and.b32 %r7, %r{b}, 7; mov.b32 %r6, %r{a};\n$L{k}:\n"
                         f"setp.eq.u32 %p2, %r7, 0; @%p2 bra.uni $E{k};\n"
                         f"add.u32 %r{d}, %r{d}, %r6; sub.u32 %r7, %r7, 1; bra.uni $L{k};\n$E{k}:")
        else:
            lines.append(f"{op} %r{d}, %r{a}, %r{b};")
    lines.append("xor.b32 %y, %r0, %r1; add.u32 %y, %y, %r2; xor.b32 %y, %y, %r3;")
    return "\n".join(lines)


def model(prog, x0: int, x1: int) -> int:
    r = [x0, x1, 12345, x0]
    for op, d, a, b in prog:
        if op == "selp":
            r[d] = r[a] if s32(r[a]) < s32(r[b]) else r[b]
        elif op == "loop":
            inc, n = r[a], r[b] & 7
            r[d] = (r[d] + inc * n) & M
        else:
            r[d] = OPS[op](r[a], r[b]) & M
    return (((r[0] ^ r[1]) + r[2]) & M) ^ r[3]


@settings(max_examples=40, deadline=None)
@given(st.lists(step, min_size=1, max_size=10),
       st.lists(st.integers(0, M), min_size=2, max_size=40))
def test_random_programs(prog, xs):
    x0 = np.array(xs, dtype=np.uint32)
    x1 = np.array(xs[::-1], dtype=np.uint32) * np.uint32(2654435761)
    got = run_snippet(render(prog), [("u32", x0), ("u32", x1)], "u32", block=32)
    assert got.tolist() == [model(prog, int(a), int(b)) for a, b in zip(x0, x1, strict=True)]
