"""Float, conversion and comparison instructions on hand-written PTX vs numpy models."""

from __future__ import annotations

import numpy as np
import pytest

from .isa import run_snippet

F32 = np.array([0.0, -0.0, 1.0, -1.5, 2.5, 3.5, -2.5, 1e-40, -1e-40, 3.0e38, np.inf, -np.inf,
                np.nan, 0.1, 123456.7, -7e9, 4.5e9, 0.49999997], dtype=np.float32)


def f32pairs():
    a = np.repeat(F32, F32.size)
    b = np.tile(F32, F32.size)
    return a, b


def same(got, exp):
    return np.array_equal(np.asarray(got), np.asarray(exp), equal_nan=True)


@pytest.mark.parametrize("body,fn", [
    ("add.f32 %y, %x0, %x1;", np.add), ("sub.rn.f32 %y, %x0, %x1;", np.subtract),
    ("mul.f32 %y, %x0, %x1;", np.multiply), ("div.rn.f32 %y, %x0, %x1;", np.divide),
    ("min.f32 %y, %x0, %x1;", np.fmin), ("max.f32 %y, %x0, %x1;", np.fmax),
    ("copysign.f32 %y, %x1, %x0;", np.copysign),
])
def test_f32_binary(body, fn):
    a, b = f32pairs()
    with np.errstate(all="ignore"):
        assert same(run_snippet(body, [("f32", a), ("f32", b)], "f32"), fn(a, b))


def test_directed_rounding_add():
    a = np.array([1.0, 1.0, -1.0, 1e8], dtype=np.float32)
    b = np.array([1e-8, -1e-8, -1e-8, 1.0], dtype=np.float32)
    exact = a.astype(np.float64) + b
    for mode, pick in (("rz", np.trunc), ("rm", np.floor), ("rp", np.ceil)):
        got = run_snippet(f"add.{mode}.f32 %y, %x0, %x1;", [("f32", a), ("f32", b)], "f32")
        lo = np.nextafter(exact.astype(np.float32), np.float32(-np.inf))
        for g, e in zip(got.astype(np.float64), exact, strict=False):
            cands = [np.float32(e), np.nextafter(np.float32(e), np.float32(np.inf)),
                     np.nextafter(np.float32(e), np.float32(-np.inf))]
            ok = [c for c in cands if (mode == "rz" and abs(c) <= abs(e)) or
                  (mode == "rm" and c <= e) or (mode == "rp" and c >= e)]
            best = max(ok, key=abs) if mode == "rz" else (max(ok) if mode == "rm" else min(ok))
            assert g == best, (mode, g, e)
        del lo, pick


def test_fma_single_rounding():
    a = np.array([1 + 2**-23, 3.0, 0.1], dtype=np.float32)
    b = np.array([1 - 2**-23, 7.0, 10.0], dtype=np.float32)
    c = np.array([-1.0, 1.0, -1.0], dtype=np.float32)
    got = run_snippet("fma.rn.f32 %y, %x0, %x1, %x2;", [("f32", a), ("f32", b), ("f32", c)],
                      "f32")
    assert same(got, (a.astype(np.float64) * b + c).astype(np.float32))
    assert got[0] != np.float32(a[0] * b[0]) + c[0]      # not two roundings


def test_fma_f32_is_rounded_once_where_float64_would_round_twice():
    # a*b = 2**-24 - 2**-60, so a*b + c lies just below the float32 midpoint of c and its
    # successor; float64 rounds the sum onto the midpoint and float32 then rounds it up to
    # even, where one rounding of the exact value goes down to c
    a = np.array([2**-12 * (1 + 2**-18)], dtype=np.float32)
    b = np.array([2**-12 * (1 - 2**-18)], dtype=np.float32)
    c = np.array([1 + 2**-23], dtype=np.float32)
    assert (a.astype(np.float64) * b + c).astype(np.float32)[0] == np.float32(1 + 2**-22)
    got = run_snippet("fma.rn.f32 %y, %x0, %x1, %x2;", [("f32", a), ("f32", b), ("f32", c)],
                      "f32")
    assert got[0] == c[0]


# (body, exact function, relative tolerance): exact instructions within 1e-6, the .approx
# ones within the PTX ISA's bounds (tests/ptx/test_approx.py checks those closely)
@pytest.mark.parametrize("body,fn,rtol", [
    ("sqrt.rn.f32 %y, %x0;", np.sqrt, 1e-6),
    ("rsqrt.approx.f32 %y, %x0;", lambda x: 1 / np.sqrt(x), 2.0 ** -22),
    ("rcp.rn.f32 %y, %x0;", lambda x: 1 / x, 1e-6),
    ("ex2.approx.ftz.f32 %y, %x0;", np.exp2, 2.0 ** -22),
    ("lg2.approx.f32 %y, %x0;", np.log2, 2.0 ** -22), ("abs.f32 %y, %x0;", np.abs, 1e-6),
    ("neg.f32 %y, %x0;", np.negative, 1e-6), ("tanh.approx.f32 %y, %x0;", np.tanh, 2.0 ** -10),
])
def test_f32_unary(body, fn, rtol):
    x = F32[np.abs(F32) < 1e30]
    with np.errstate(all="ignore"):
        exp = fn(x).astype(np.float32)
        got = run_snippet(body, [("f32", x)], "f32")
    if ".ftz" in body:
        exp = np.where(np.abs(exp) < np.finfo(np.float32).tiny, 0, exp).astype(np.float32)
    assert np.allclose(got, exp, rtol=rtol, atol=0, equal_nan=True)


@pytest.mark.parametrize("body,fn", [("sin.approx.f32 %y, %x0;", np.sin),
                                     ("cos.approx.f32 %y, %x0;", np.cos)])
def test_sin_cos_approx_within_the_isa_bound_on_minus_pi_pi(body, fn):
    x = F32[np.abs(F32) <= np.pi]
    got = run_snippet(body, [("f32", x)], "f32")
    assert np.abs(got - fn(x.astype(np.float64))).max() <= 2.0 ** -20.9


def test_ftz_flushes_subnormals():
    x = np.array([1e-40, -1e-40, 1.0], dtype=np.float32)
    got = run_snippet("mul.ftz.f32 %y, %x0, 0f3F800000;", [("f32", x)], "f32")
    assert got.tolist() == [0.0, 0.0, 1.0] and np.signbit(got[1])
    got = run_snippet("mul.sat.f32 %y, %x0, 0f40000000;", [("f32", x)], "f32")
    assert got.tolist() == [pytest.approx(2e-40, rel=1e-3), 0.0, 1.0]


def test_f64_arithmetic():
    a = np.array([1.0, -2.5, 1e300, np.nan, 3.0], dtype=np.float64)
    b = np.array([3.0, 0.5, 1e10, 1.0, 0.0], dtype=np.float64)
    with np.errstate(all="ignore"):
        assert same(run_snippet("div.rn.f64 %y, %x0, %x1;", [("f64", a), ("f64", b)], "f64"),
                    a / b)
        assert same(run_snippet("fma.rn.f64 %y, %x0, %x1, %x0;", [("f64", a), ("f64", b)],
                                "f64"), a * b + a)
        assert same(run_snippet("rcp.rn.f64 %y, %x0;", [("f64", a)], "f64"), 1 / a)


CVT_CASES = [
    ("cvt.rzi.s32.f32", "f32", "s32", lambda x: _sat(np.trunc(x), -2**31, 2**31 - 1)),
    ("cvt.rni.s32.f32", "f32", "s32", lambda x: _sat(np.rint(x), -2**31, 2**31 - 1)),
    ("cvt.rmi.s32.f32", "f32", "s32", lambda x: _sat(np.floor(x), -2**31, 2**31 - 1)),
    ("cvt.rpi.u32.f32", "f32", "u32", lambda x: _sat(np.ceil(x), 0, 2**32 - 1)),
    # a NaN into 64 bits is 0x8000000000000000 (as an H200 gives it: test_hw_fidelity.py)
    ("cvt.rzi.s64.f32", "f32", "s64", lambda x: _sat(np.trunc(x), -2**63, 2**63 - 1, -2**63)),
    ("cvt.rzi.u64.f32", "f32", "u64", lambda x: _sat(np.trunc(x), 0, 2**64 - 1, 2**63)),
    ("cvt.rzi.s16.f32", "f32", "s16", lambda x: _sat(np.trunc(x), -2**15, 2**15 - 1)),
    ("cvt.rni.f32.f32", "f32", "f32", np.rint),
    ("cvt.f64.f32", "f32", "f64", lambda x: x.astype(np.float64)),
    ("cvt.rn.f16.f32", "f32", "f16", lambda x: x.astype(np.float16)),
    ("cvt.sat.f32.f32", "f32", "f32", lambda x: np.where(np.isnan(x), 0, np.clip(x, 0, 1))),
]


def _sat(v, lo, hi, nan=0):
    return [nan if np.isnan(x) else int(min(max(x, lo), hi)) for x in v.astype(np.float64)]


@pytest.mark.parametrize("opcode,st,dt,fn", CVT_CASES)
def test_cvt_float_source(opcode, st, dt, fn):
    x = F32
    body = f"{opcode} %y, %x0;"
    with np.errstate(all="ignore"):
        got = run_snippet(body, [(st, x)], dt)
        exp = fn(x)
    if isinstance(exp, list):
        assert [int(g) for g in got] == exp
    else:
        assert same(got, np.asarray(exp).astype(got.dtype))


def test_cvt_integer_and_to_float():
    v = np.array([0, 1, -1, 127, 128, -129, 70000, -2**31, 2**31 - 1], dtype=np.int64)
    assert run_snippet("cvt.s8.s32 %y, %x0;", [("s32", v)], "s16").tolist() == \
        v.astype(np.int32).astype(np.int8).tolist()
    assert run_snippet("cvt.sat.s8.s32 %y, %x0;", [("s32", v)], "s16").tolist() == \
        np.clip(v, -128, 127).tolist()
    assert run_snippet("cvt.u64.u32 %y, %x0;", [("u32", v)], "u64").tolist() == \
        (v & 0xFFFFFFFF).tolist()
    assert run_snippet("cvt.s64.s32 %y, %x0;", [("s32", v)], "s64").tolist() == \
        v.astype(np.int32).tolist()
    assert run_snippet("cvt.u32.u64 %y, %x0;", [("u64", v)], "u32").tolist() == \
        (v & 0xFFFFFFFF).tolist()
    got = run_snippet("cvt.rn.f32.s32 %y, %x0;", [("s32", v)], "f32")
    assert same(got, v.astype(np.int32).astype(np.float32))
    got = run_snippet("cvt.rz.f32.s32 %y, %x0;", [("s32", np.array([2**31 - 1]))], "f32")
    assert got[0] == np.float32(2147483520.0)
    got = run_snippet("cvt.rn.f64.u64 %y, %x0;", [("u64", np.array([2**64 - 1]))], "f64")
    assert got[0] == 2.0**64


SETP = {"eq": np.equal, "ne": lambda a, b: (a != b) & ~np.isnan(a) & ~np.isnan(b),
        "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
        "equ": lambda a, b: (a == b) | np.isnan(a) | np.isnan(b), "neu": np.not_equal,
        "ltu": lambda a, b: ~(a >= b), "leu": lambda a, b: ~(a > b),
        "gtu": lambda a, b: ~(a <= b), "geu": lambda a, b: ~(a < b),
        "num": lambda a, b: ~(np.isnan(a) | np.isnan(b)),
        "nan": lambda a, b: np.isnan(a) | np.isnan(b)}


@pytest.mark.parametrize("cmp", list(SETP))
def test_setp_float_every_comparison(cmp):
    a, b = f32pairs()
    got = run_snippet(f"setp.{cmp}.f32 %y, %x0, %x1;", [("f32", a), ("f32", b)], "pred")
    with np.errstate(all="ignore"):
        assert np.array_equal(got, SETP[cmp](a, b))


@pytest.mark.parametrize("cmp,fn", [("lo", lambda a, b: a < b), ("hs", lambda a, b: a >= b),
                                    ("lt", lambda a, b: a.view(np.int32) < b.view(np.int32))])
def test_setp_integer_and_combine(cmp, fn):
    a = np.array([0, 1, 0xFFFFFFFF, 5, 0x80000000], dtype=np.uint32)
    b = np.array([1, 1, 0, 7, 3], dtype=np.uint32)
    ty = "s32" if cmp == "lt" else "u32"
    got = run_snippet(f"setp.{cmp}.{ty} %y, %x0, %x1;", [("u32", a), ("u32", b)], "pred")
    assert np.array_equal(got, fn(a, b))
    body = f"setp.ne.u32 %p1, %x0, 0; setp.{cmp}.or.{ty} %y|%p2, %x0, %x1, !%p1;"
    got = run_snippet(body, [("u32", a), ("u32", b)], "pred")
    assert np.array_equal(got, fn(a, b) | (a == 0))


def test_selp_slct_set_testp():
    x = np.array([1.5, -2.0, np.nan, np.inf, 1e-40], dtype=np.float32)
    got = run_snippet("setp.gt.f32 %p1, %x0, 0f00000000; selp.f32 %y, %x0, 0f3F800000, %p1;",
                      [("f32", x)], "f32")
    assert same(got, np.where(x > 0, x, 1.0).astype(np.float32))
    got = run_snippet("slct.s32.f32 %y, 7, 9, %x0;", [("f32", x)], "s32")
    assert got.tolist() == [7, 9, 9, 7, 7]
    got = run_snippet("set.lt.u32.f32 %y, %x0, 0f00000000;", [("f32", x)], "u32")
    assert got.tolist() == [0, 0xFFFFFFFF, 0, 0, 0]
    got = run_snippet("testp.subnormal.f32 %y, %x0;", [("f32", x)], "pred")
    assert got.tolist() == [False, False, False, False, True]
    got = run_snippet("testp.finite.f32 %y, %x0;", [("f32", x)], "pred")
    assert got.tolist() == [True, True, False, False, True]


def _pack(lo, hi):
    return (np.asarray(lo, np.float16).view(np.uint16).astype(np.uint32) |
            (np.asarray(hi, np.float16).view(np.uint16).astype(np.uint32) << 16))


@np.errstate(over="ignore")
def test_half_and_packed_half():
    a = np.array([1.5, -2.0, 65504.0, 0.1], np.float16)
    b = np.array([0.25, 3.0, 2.0, 1e-3], np.float16)
    got = run_snippet("add.f16 %y, %x0, %x1;", [("f16", a), ("f16", b)], "f16")
    assert same(got, a + b)
    got = run_snippet("fma.rn.f16 %y, %x0, %x1, %x1;", [("f16", a), ("f16", b)], "f16")
    assert same(got, (a.astype(np.float64) * b + b).astype(np.float16))
    pa, pb = _pack(a, b), _pack(b, a)
    got = run_snippet("mul.f16x2 %y, %x0, %x1;", [("u32", pa), ("u32", pb)], "u32")
    assert np.array_equal(got, _pack(a * b, b * a))
    got = run_snippet("neg.f16x2 %y, %x0;", [("u32", pa)], "u32")
    assert np.array_equal(got, _pack(-a, -b))
    got = run_snippet("setp.lt.f16 %y, %x0, %x1;", [("f16", a), ("f16", b)], "pred")
    assert np.array_equal(got, a < b)


def test_float_literals_keep_their_bits():
    x = np.array([1.0, -2.0, 3.0, -4.0], np.float32)
    got = run_snippet("mov.b32 %y, 0f7FC00001;", [("f32", x)], "u32")
    assert got.tolist() == [0x7FC00001] * 4
    got = run_snippet("and.b32 %r1, %x0, 0f7FFFFFFF; mov.b32 %y, %r1;",
                      [("u32", x.view(np.uint32))], "f32")
    assert got.tolist() == [1.0, 2.0, 3.0, 4.0]


@pytest.mark.parametrize("op", ["min", "max"])
@pytest.mark.parametrize("nan_first", [True, False])
def test_min_max_of_a_signaling_nan_yield_the_other_operand_on_few_lanes(op, nan_first):
    # numpy's fmin/fmax give the quieted NaN instead on arrays too short for its SIMD loop
    # (here one lane), which the differential suite caught in a divergent branch
    snan, num = np.array([0xFF9C407D], np.uint32), np.array([0x254B5EEC], np.uint32)
    x0, x1 = (snan, num) if nan_first else (num, snan)
    y = run_snippet(f"mov.b32 %f0, %x0; mov.b32 %f1, %x1; {op}.f32 %f2, %f0, %f1; "
                    "mov.b32 %y, %f2;", [("b32", x0), ("b32", x1)], "b32", block=1)
    assert y.tolist() == [0x254B5EEC]


@pytest.mark.parametrize("form", ["", ".NaN"])
@pytest.mark.parametrize("block", [1, 64])
def test_min_max_order_signed_zeros_whatever_the_operands_order(form, block):
    # the PTX ISA: of two zeros +0.0 > -0.0; numpy's fmin/minimum leave that tie to their
    # loop (the random differential suite met min(-0, +0) giving +0 on one engine)
    pz, nz = 0x00000000, 0x80000000
    x0 = np.array([pz, nz, nz, pz] * 16, np.uint32)
    x1 = np.array([nz, pz, nz, pz] * 16, np.uint32)
    for op, want in (("min", [nz, nz, nz, pz]), ("max", [pz, pz, nz, pz])):
        y = run_snippet(f"mov.b32 %f0, %x0; mov.b32 %f1, %x1; {op}{form}.f32 %f2, %f0, %f1; "
                        "mov.b32 %y, %f2;", [("b32", x0), ("b32", x1)], "b32", block=block)
        assert y.tolist() == want * 16, op
        d = run_snippet(f"cvt.f64.f32 %fd0, %x0; cvt.f64.f32 %fd1, %x1; "
                        f"{op}.f64 %fd2, %fd0, %fd1; cvt.rn.f32.f64 %y, %fd2;",
                        [("f32", x0.view(np.float32)), ("f32", x1.view(np.float32))], "f32",
                        block=block)
        assert d.view(np.uint32).tolist() == want * 16, f"{op}.f64"
        # packed halves: each half a zero tie (0x8000 = -0.0)
        h0 = (x0 >> 16) | (x1 >> 16 << 16)
        h1 = (x1 >> 16) | (x0 >> 16 << 16)
        h = run_snippet(f"{op}{form}.f16x2 %y, %x0, %x1;", [("u32", h0), ("u32", h1)], "u32",
                        block=block)
        assert (h & 0xFFFF).tolist() == [w >> 16 for w in want] * 16, f"{op}.f16x2 low"
        assert (h >> 16).tolist() == [w >> 16 for w in want] * 16, f"{op}.f16x2 high"
