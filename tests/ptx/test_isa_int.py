"""Integer and bit instructions on hand-written PTX, against Python integer models."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .isa import run_snippet

M32, M64 = (1 << 32) - 1, (1 << 64) - 1
EDGE32 = [0, 1, 2, 31, 32, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFE, 12345678]
EDGE64 = [0, 1, (1 << 63) - 1, 1 << 63, M64, 0xDEADBEEFCAFEBABE, 3, 1 << 32]


def s32(x: int) -> int:
    x &= M32
    return x - (1 << 32) if x >> 31 else x


def s64(x: int) -> int:
    x &= M64
    return x - (1 << 64) if x >> 63 else x


def pairs(vals):
    a = [x for x in vals for _ in vals]
    b = [y for _ in vals for y in vals]
    return np.array(a, dtype=np.uint64), np.array(b, dtype=np.uint64)


def tdiv(x: int, y: int) -> int:
    return abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)


CASES32 = {
    "add.s32 %y, %x0, %x1;": lambda a, b: a + b,
    "sub.u32 %y, %x0, %x1;": lambda a, b: a - b,
    "add.sat.s32 %y, %x0, %x1;": lambda a, b: max(-2**31, min(2**31 - 1, s32(a) + s32(b))),
    "sub.sat.s32 %y, %x0, %x1;": lambda a, b: max(-2**31, min(2**31 - 1, s32(a) - s32(b))),
    "mul.lo.u32 %y, %x0, %x1;": lambda a, b: a * b,
    "mul.hi.u32 %y, %x0, %x1;": lambda a, b: (a * b) >> 32,
    "mul.hi.s32 %y, %x0, %x1;": lambda a, b: (s32(a) * s32(b)) >> 32,
    "div.u32 %y, %x0, %x1;": lambda a, b: a // b if b else M32,
    "rem.u32 %y, %x0, %x1;": lambda a, b: a % b if b else M32,   # x%0: all ones, as an H200 gives
    "div.s32 %y, %x0, %x1;": lambda a, b: tdiv(s32(a), s32(b)) if b else -1,
    "rem.s32 %y, %x0, %x1;": lambda a, b: s32(a) - tdiv(s32(a), s32(b)) * s32(b) if b else -1,
    "min.s32 %y, %x0, %x1;": lambda a, b: min(s32(a), s32(b)),
    "max.u32 %y, %x0, %x1;": lambda a, b: max(a, b),
    "shl.b32 %y, %x0, %x1;": lambda a, b: a << b if b < 32 else 0,
    "shr.u32 %y, %x0, %x1;": lambda a, b: a >> b if b < 32 else 0,
    "shr.s32 %y, %x0, %x1;": lambda a, b: s32(a) >> min(b, 31),
    "and.b32 %y, %x0, %x1;": lambda a, b: a & b,
    "or.b32 %y, %x0, %x1;": lambda a, b: a | b,
    "xor.b32 %y, %x0, %x1;": lambda a, b: a ^ b,
    "shf.l.wrap.b32 %y, %x0, %x1, %x1;": lambda a, b: ((b << 32 | a) << (b & 31)) >> 32,
    "shf.r.clamp.b32 %y, %x0, %x1, %x1;": lambda a, b: (b << 32 | a) >> min(b, 32),
    # one register on both sides: a rotation (compiled as rol/ror)
    "shf.r.wrap.b32 %y, %x0, %x0, %x1;": lambda a, b: (a << 32 | a) >> (b & 31),
    "shf.l.wrap.b32 %y, %x0, %x0, %x1;": lambda a, b: ((a << 32 | a) << (b & 31)) >> 32,
    "shf.r.clamp.b32 %y, %x0, %x0, %x1;": lambda a, b: (a << 32 | a) >> min(b, 32),
    "mul24.lo.u32 %y, %x0, %x1;": lambda a, b: (a & 0xFFFFFF) * (b & 0xFFFFFF),
    "sad.u32 %y, %x0, %x1, 7;": lambda a, b: abs(a - b) + 7,
    "prmt.b32 %y, %x0, %x1, 0x7531;": lambda a, b: _prmt(a, b, 0x7531),
    "prmt.b32 %y, %x0, %x1, 0x8ba9;": lambda a, b: _prmt(a, b, 0x8BA9),
    "lop3.b32 %y, %x0, %x1, 0xF0F0F0F0, 0x96;": lambda a, b: a ^ b ^ 0xF0F0F0F0,
    "lop3.b32 %y, %x0, %x1, 0x0000FFFF, 0xE8;":
        lambda a, b: (a & b) | (a & 0xFFFF) | (b & 0xFFFF),
    "dp4a.u32.u32 %y, %x0, %x1, 5;": lambda a, b: 5 + sum(
        ((a >> 8 * k) & 255) * ((b >> 8 * k) & 255) for k in range(4)),
    "dp4a.s32.s32 %y, %x0, %x1, 5;": lambda a, b: 5 + sum(
        _s8(a >> 8 * k) * _s8(b >> 8 * k) for k in range(4)),
}


def _s8(x: int) -> int:
    x &= 255
    return x - 256 if x >> 7 else x


def _prmt(a: int, b: int, s: int) -> int:
    bs = list(a.to_bytes(4, "little")) + list(b.to_bytes(4, "little"))
    r = 0
    for k in range(4):
        sel = (s >> 4 * k) & 15
        byte = bs[sel & 7]
        if sel & 8:
            byte = 255 if byte & 128 else 0
        r |= byte << 8 * k
    return r


@pytest.mark.parametrize("body", list(CASES32))
def test_binary_32(body):
    a, b = pairs(EDGE32)
    got = run_snippet(body, [("u32", a), ("u32", b)], "u32")
    model = CASES32[body]
    exp = [model(int(x), int(y)) & M32 for x, y in zip(a, b, strict=False)]
    assert got.tolist() == exp


CASES64 = {
    "add.s64 %y, %x0, %x1;": lambda a, b: a + b,
    "mul.lo.s64 %y, %x0, %x1;": lambda a, b: a * b,
    "mul.hi.u64 %y, %x0, %x1;": lambda a, b: (a * b) >> 64,
    "mul.hi.s64 %y, %x0, %x1;": lambda a, b: (s64(a) * s64(b)) >> 64,
    "div.s64 %y, %x0, %x1;": lambda a, b: tdiv(s64(a), s64(b)) if b else -1,
    "rem.u64 %y, %x0, %x1;": lambda a, b: a % b if b else M64,
    "min.s64 %y, %x0, %x1;": lambda a, b: min(s64(a), s64(b)),
    "shr.s64 %y, %x0, %x1;": lambda a, b: s64(a) >> min(b & M32, 63),
}


@pytest.mark.parametrize("body", list(CASES64))
def test_binary_64(body):
    a, b = pairs(EDGE64)
    if "shr" in body:
        b = b % 70
    got = run_snippet(body, [("u64", a), ("u64", b)], "u64")
    model = CASES64[body]
    exp = [model(int(x), int(y)) & M64 for x, y in zip(a, b, strict=False)]
    assert got.tolist() == exp


UNARY = {
    "popc.b32 %y, %x0;": lambda a: bin(a).count("1"),
    "clz.b32 %y, %x0;": lambda a: 32 - a.bit_length(),
    "brev.b32 %y, %x0;": lambda a: int(f"{a:032b}"[::-1], 2),
    "bfind.u32 %y, %x0;": lambda a: a.bit_length() - 1 if a else M32,
    "bfind.s32 %y, %x0;": lambda a: ((~s32(a)) if s32(a) < 0 else a).bit_length() - 1
    if a not in (0, M32) else M32,
    "abs.s32 %y, %x0;": lambda a: abs(s32(a)),
    "neg.s32 %y, %x0;": lambda a: -a,
    "not.b32 %y, %x0;": lambda a: ~a,
    "cnot.b32 %y, %x0;": lambda a: int(a == 0),
    "bfe.u32 %y, %x0, 4, 8;": lambda a: (a >> 4) & 255,
    "bfe.s32 %y, %x0, 28, 8;": lambda a: s32(a) >> 28,
    "bfe.s32 %y, %x0, 3, 5;": lambda a: _sx((a >> 3) & 31, 5),
    "bfi.b32 %y, %x0, 0xF0F0F0F0, 8, 12;": lambda a: (0xF0F0F0F0 & ~(0xFFF << 8)) |
    ((a << 8) & (0xFFF << 8)),
    "mad.lo.s32 %y, %x0, 3, -7;": lambda a: a * 3 - 7,
    "mad.hi.u32 %y, %x0, %x0, 1;": lambda a: ((a * a) >> 32) + 1,
}


def _sx(v: int, bits: int) -> int:
    return v - (1 << bits) if v >> (bits - 1) else v


@pytest.mark.parametrize("body", list(UNARY))
def test_unary_32(body):
    a = np.array(EDGE32 + [0xF000000F, 0x00010000], dtype=np.uint32)
    got = run_snippet(body, [("u32", a)], "u32")
    exp = [UNARY[body](int(x)) & M32 for x in a]
    assert got.tolist() == exp


def test_wide_multiply_and_mad():
    a = np.array([0xFFFFFFFF, 0x80000000, 5, 0x7FFFFFFF], dtype=np.uint32)
    got = run_snippet("mul.wide.s32 %y, %x0, %x0;", [("u32", a)], "s64")
    assert got.tolist() == [s32(int(x)) ** 2 for x in a]
    got = run_snippet("mad.wide.u32 %y, %x0, %x0, 10;", [("u32", a)], "u64")
    assert got.tolist() == [int(x) ** 2 + 10 for x in a]
    got = run_snippet("mul.wide.u16 %y, %x0, %x0;", [("u16", a.astype(np.uint16))], "u32")
    assert got.tolist() == [(int(x) & 0xFFFF) ** 2 for x in a]


def test_carry_chain_128bit_add():
    """add.cc/addc/madc chains compute multi-word arithmetic."""
    a, b = pairs(EDGE64)
    body = """.reg .b32 %lo<3>; .reg .b32 %hi<3>;
    mov.b64 {%lo0, %hi0}, %x0; mov.b64 {%lo1, %hi1}, %x1;
    add.cc.u32 %lo2, %lo0, %lo1; addc.u32 %hi2, %hi0, %hi1;
    mov.b64 %y, {%lo2, %hi2};"""
    got = run_snippet(body, [("u64", a), ("u64", b)], "u64")
    assert got.tolist() == [(int(x) + int(y)) & M64 for x, y in zip(a, b, strict=False)]
    body = body.replace("add.cc.u32", "sub.cc.u32").replace("addc.u32", "subc.u32")
    got = run_snippet(body, [("u64", a), ("u64", b)], "u64")
    assert got.tolist() == [(int(x) - int(y)) & M64 for x, y in zip(a, b, strict=False)]


def test_madc_carry_chain():
    """mad.lo.cc/madc carry between 32-bit words: (a + 3*b) as 64-bit arithmetic."""
    a, b = pairs(EDGE64[:6])
    body = """.reg .b32 %a<2>; .reg .b32 %b<2>; .reg .b32 %c<2>; .reg .b32 %t<2>;
    mov.b64 {%a0, %a1}, %x0; mov.b64 {%b0, %b1}, %x1;
    mad.lo.cc.u32 %c0, %b0, 3, %a0;
    madc.hi.u32 %t0, %b0, 3, 0;
    mad.lo.u32 %c1, %b1, 3, %a1;
    add.u32 %c1, %c1, %t0;
    mov.b64 %y, {%c0, %c1};"""
    got = run_snippet(body, [("u64", a), ("u64", b)], "u64")
    assert got.tolist() == [(int(x) + 3 * int(y)) & M64 for x, y in zip(a, b, strict=False)]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, M32), min_size=2, max_size=40),
       st.sampled_from(["add.u32", "mul.lo.u32", "xor.b32", "min.u32", "max.s32",
                        "mul.hi.u32", "rem.u32"]))
def test_hypothesis_binary_ops(vals, opname):
    a = np.array(vals, dtype=np.uint32)
    b = a[::-1].copy()
    got = run_snippet(f"{opname} %y, %x0, %x1;", [("u32", a), ("u32", b)], "u32", block=32)
    f = {"add.u32": lambda x, y: x + y, "mul.lo.u32": lambda x, y: x * y,
         "xor.b32": lambda x, y: x ^ y, "min.u32": min,
         "max.s32": lambda x, y: max(s32(x), s32(y)), "mul.hi.u32": lambda x, y: x * y >> 32,
         "rem.u32": lambda x, y: x % y if y else 0xFFFFFFFF}[opname]
    assert got.tolist() == [f(int(x), int(y)) & M32 for x, y in zip(a, b, strict=False)]


def _fns(mask: int, base: int, offset: int) -> int:
    if offset == 0:
        return base if mask >> base & 1 else M32
    pos, count, inc = base, abs(offset) - 1, 1 if offset > 0 else -1
    while 0 <= pos < 32:
        if mask >> pos & 1:
            if count == 0:
                return pos
            count -= 1
        pos += inc
    return M32


def _lanes(v: int, width: int, signed: bool) -> list[int]:
    out = []
    for k in range(32 // width):
        x = v >> width * k & (1 << width) - 1
        out.append(x - (1 << width) if signed and x >> width - 1 else x)
    return out


def _pack(vals: list[int], width: int) -> int:
    return sum((v & (1 << width) - 1) << width * k for k, v in enumerate(vals))


SIMD = {
    "vabsdiff4.u32.u32.u32 %y, %x0, %x1, 0;":
        lambda a, b: _pack([abs(x - y) for x, y in zip(_lanes(a, 8, False), _lanes(b, 8, False),
                                                       strict=True)], 8),
    "vadd2.s32.s32.s32.sat %y, %x0, %x1, 0;":
        lambda a, b: _pack([max(-32768, min(32767, x + y)) for x, y in
                            zip(_lanes(a, 16, True), _lanes(b, 16, True), strict=True)], 16),
    "vmax4.s32.s32.s32 %y, %x0, %x1, 0;":
        lambda a, b: _pack([max(x, y) for x, y in zip(_lanes(a, 8, True), _lanes(b, 8, True),
                                                      strict=True)], 8),
    "vset4.u32.u32.lt %y, %x0, %x1, 0;":
        lambda a, b: _pack([int(x < y) for x, y in zip(_lanes(a, 8, False),
                                                       _lanes(b, 8, False), strict=True)], 8),
    "vabsdiff4.u32.u32.u32.add %y, %x0, %x1, 5;":
        lambda a, b: 5 + sum(abs(x - y) for x, y in zip(_lanes(a, 8, False),
                                                        _lanes(b, 8, False), strict=True)),
    "vavrg2.u32.u32.u32 %y, %x0, %x1, 0;":
        lambda a, b: _pack([(x + y + 1) >> 1 for x, y in zip(_lanes(a, 16, False),
                                                             _lanes(b, 16, False),
                                                             strict=True)], 16),
}


@pytest.mark.parametrize("body", list(SIMD))
def test_simd_video_instructions(body):
    a, b = pairs(EDGE32 + [0x80FF7F01, 0x01020304])
    got = run_snippet(body, [("u32", a), ("u32", b)], "u32")
    assert got.tolist() == [SIMD[body](int(x), int(y)) & M32 for x, y in zip(a, b, strict=True)]


def test_fns_find_nth_set_bit():
    rng = np.random.default_rng(5)
    m = rng.integers(0, 2**32, 300, dtype=np.uint64).astype(np.uint32)
    base = rng.integers(0, 32, 300).astype(np.uint32)
    off = rng.integers(-6, 7, 300).astype(np.int32)
    got = run_snippet("fns.b32 %y, %x0, %x1, %x2;", [("u32", m), ("u32", base), ("s32", off)],
                      "u32")
    assert got.tolist() == [_fns(int(x), int(y), int(z)) for x, y, z in
                            zip(m, base, off, strict=True)]
