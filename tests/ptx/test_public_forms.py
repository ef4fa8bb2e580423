"""Forms that public CUDA programs made nvcc emit and the engines lacked (found by
tests/programs): the ``WARP_SZ`` constant (``warpSize``), ``redux.sync`` (sm_80's
``__reduce_*_sync``), ``cvt.rn[.relu].f16x2.f32`` (sm_80's ``__floats2half2_rn``), and
``set`` with ``.f16x2`` sources or 16-bit destinations (``__hbgt2``, ``__hisnan``), each
checked against a numpy model on both engines (the compiled one must translate it)."""

from __future__ import annotations

import numpy as np
import pytest

from gdevd.gpu.ptx import jit, load_module

from .isa import kernel_text, run_snippet

N = 256


def _run(engine: str, body: str, inputs, out: str, block: int = 64) -> np.ndarray:
    """run_snippet, first requiring that the compiled engine translates the kernel."""
    if engine == "jit":
        mod = load_module(kernel_text([t for t, _ in inputs], out, body), "forms")
        mod.start_compile(wait=True)
        assert mod.jit.engine_of("k") == "jit", mod.jit.compiled.rejected
    return run_snippet(body, inputs, out, block=block)


def _words(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 1 << 32, N, dtype=np.uint64).astype(np.uint32)


def test_warp_size_constant(engine):
    x = _words(1)
    got = _run(engine, "rem.u32 %r3, %x0, WARP_SZ; mov.u32 %r4, WARP_SZ; add.u32 %y, %r3, %r4;",
               [("u32", x)], "u32")
    assert np.array_equal(got, x % 32 + 32)


REDUX = {"add.u32": lambda w: w.astype(np.uint64).sum() & 0xFFFFFFFF,
         "min.u32": np.min, "max.u32": np.max,
         "min.s32": lambda w: w.view(np.int32).min(), "max.s32": lambda w: w.view(np.int32).max(),
         "and.b32": np.bitwise_and.reduce, "or.b32": np.bitwise_or.reduce,
         "xor.b32": np.bitwise_xor.reduce}


@pytest.mark.parametrize("form", sorted(REDUX))
def test_redux_sync_over_the_executing_lanes(engine, form):
    """Even lanes reduce over all 32; odd lanes skip the first redux and reduce over the
    odd lanes only (the member mask is the executing lanes), with a 48-thread block's
    partial last warp."""
    x = _words(2)
    x[:40] = np.arange(40, dtype=np.uint32) * 0x9000001
    body = (f"mov.u32 %r5, %tid.x; and.b32 %r5, %r5, 1; setp.ne.u32 %p1, %r5, 0; mov.u32 %y, 7;"
            f"@%p1 bra $ODD; redux.sync.{form} %y, %x0, -1; bra.uni $END;"
            f"$ODD: redux.sync.{form} %y, %x0, 0xaaaaaaaa; $END:")
    n = 240                      # five whole blocks of 48
    got = _run(engine, body, [("u32", x[:n])], "u32", block=48)
    fn = REDUX[form]
    for i in range(n):
        blk, t = divmod(i, 48)
        lo = blk * 48 + (t & ~31)
        warp = np.arange(lo, min(lo + 32, blk * 48 + 48))
        members = warp[(warp - lo) % 2 == t % 2]
        assert got[i] == np.uint32(np.int64(fn(x[members])) & 0xFFFFFFFF), (form, i)


F = np.concatenate([np.random.default_rng(3).standard_normal(N - 8) * 1000,
                    [0, -0.0, np.inf, -np.inf, np.nan, 65520, -1e-8, 7e4]]).astype(np.float32)


def _h(x) -> np.ndarray:
    return np.asarray(x, np.float64).astype(np.float16).view(np.uint16).astype(np.uint32)


@pytest.mark.parametrize("relu", [False, True])
def test_cvt_pack_two_floats_to_f16x2(engine, relu):
    g = np.roll(F, 5)
    mod = ".relu" if relu else ""
    with np.errstate(over="ignore"):
        got = _run(engine, f"cvt.rn{mod}.f16x2.f32 %y, %x0, %x1;", [("f32", F), ("f32", g)],
                   "u32")
        hi, lo = _h(F), _h(g)
    if relu:
        def clamp(h, f):
            return np.where(np.isnan(f), 0x7FFF, np.where(f < 0, np.where(h == 0x8000, h, 0), h))
        hi, lo = clamp(hi, F), clamp(lo, g)
    assert np.array_equal(got, (hi << 16 | lo).astype(np.uint32))


_R = np.random.default_rng(4)
HV = np.concatenate([_R.standard_normal(N - 6) * 4, [np.nan, 1, -0.0, 0, np.inf, 2]])
HV = HV.astype(np.float16)
HW = np.roll(HV, 3)
HW[:20] = HV[:20]          # equal halves
PAIRS = (HV.view(np.uint16).astype(np.uint32) | HW.view(np.uint16).astype(np.uint32) << 16)
PAIRS2 = np.roll(PAIRS, 11)


def _halves(p: np.ndarray) -> list[np.ndarray]:
    return [(p >> s & 0xFFFF).astype(np.uint16).view(np.float16) for s in (0, 16)]


@pytest.mark.parametrize("dtype,true", [("u32", 0xFFFF), ("f16x2", 0x3C00)])
@pytest.mark.parametrize("cmp,fn", [("gt", np.greater), ("leu", lambda a, b: ~(a > b)),
                                    ("ne", lambda a, b: (a < b) | (a > b))])
def test_set_compares_each_half(engine, dtype, true, cmp, fn):
    with np.errstate(invalid="ignore"):
        got = _run(engine, f"set.{cmp}.{dtype}.f16x2 %y, %x0, %x1;",
                   [("u32", PAIRS), ("u32", PAIRS2)], "u32")
        res = [fn(a, b) for a, b in zip(_halves(PAIRS), _halves(PAIRS2), strict=True)]
    want = np.where(res[0], true, 0) | np.where(res[1], true, 0) << 16
    assert np.array_equal(got, want.astype(np.uint32))


def test_set_with_a_boolean_and_16_bit_results(engine):
    """set.nan.f16.f16 gives 1.0 in f16; set.lt.and.u16.f16 all ones of 16 bits."""
    body = ("set.nan.f16.f16 %rs3, %x0, %x1; setp.gt.f16 %p1, %x1, 0f00000000;"
            "set.lt.and.u16.f16 %rs4, %x0, %x1, %p1; cvt.u32.u16 %r3, %rs3;"
            "cvt.u32.u16 %r4, %rs4; shl.b32 %r4, %r4, 16; or.b32 %y, %r3, %r4;")
    got = _run(engine, body, [("f16", HV), ("f16", HW)], "u32")
    a, b = HV.astype(np.float64), HW.astype(np.float64)
    want = np.where(np.isnan(a) | np.isnan(b), 0x3C00, 0) | \
        np.where((a < b) & (b > 0), 0xFFFF, 0) << 16
    assert np.array_equal(got, want.astype(np.uint32))


SIMD = ["vabsdiff4.u32.u32.u32.add", "vabsdiff4.u32.u32.u32", "vabsdiff2.s32.s32.s32.sat",
        "vadd4.u32.u32.u32.sat", "vadd2.s32.s32.s32.add", "vsub4.s32.u32.s32.sat",
        "vsub2.u32.u32.u32", "vavrg4.u32.u32.u32", "vavrg2.s32.s32.s32", "vmin4.s32.s32.s32",
        "vmax2.u32.u32.u32.add", "vset4.u32.u32.lt", "vset2.s32.s32.ne.add",
        "vset4.s32.u32.ge"]
FNS = ["fns.b32 %y, %x0, %x1, %x2;", "and.b32 %r3, %x2, 15; sub.s32 %r3, 7, %r3;"
       "fns.b32 %y, %x0, %x1, %r3;", "fns.b32 %y, %x0, %x1, 0;"]


@pytest.mark.parametrize("engine", ["jit"], indirect=True)
@pytest.mark.parametrize("body", [f"{f} %y, %x0, %x1, %x2;" for f in SIMD] + FNS)
def test_simd_video_compiled_as_interpreted(engine, body):
    """nvcc's __vsadu4/__vabsdiffu4 (vabsdiff4[.add]), the other SIMD forms and __fns: the
    compiled engine gives the interpreter's bits (ops_simd, checked against models in
    test_isa_int)."""
    inputs = [("u32", _words(5)), ("u32", _words(6)), ("u32", _words(7))]
    got = _run("jit", body, inputs, "u32")
    jit.set_engine("interp")
    assert np.array_equal(got, run_snippet(body, inputs, "u32"))


def test_vsadu4_model(engine):
    x, y, c = _words(8), _words(9), _words(10) >> 8
    got = _run(engine, "vabsdiff4.u32.u32.u32.add %y, %x0, %x1, %x2;",
               [("u32", x), ("u32", y), ("u32", c)], "u32")
    lanes = [np.abs((x.astype(np.int64) >> s & 255) - (y.astype(np.int64) >> s & 255))
             for s in (0, 8, 16, 24)]
    assert np.array_equal(got, (c + sum(lanes)).astype(np.uint32))


@pytest.mark.parametrize("cmp,fn", [("lt", np.less), ("geu", lambda a, b: ~(a < b)),
                                    ("num", lambda a, b: ~(np.isnan(a) | np.isnan(b)))])
def test_setp_f16x2_sets_one_predicate_per_half(engine, cmp, fn):
    """p from the low halves, q from the high ones, each combined with c by .and / .xor."""
    body = (f"setp.{cmp}.f16x2 %p1|%p2, %x0, %x1; setp.ne.u32 %p5, %x2, 0;"
            f"setp.{cmp}.xor.f16x2 %p3|%p4, %x0, %x1, %p5;"
            "selp.u32 %r3, 1, 0, %p1; selp.u32 %r4, 2, 0, %p2; selp.u32 %r5, 4, 0, %p3;"
            "selp.u32 %r6, 8, 0, %p4; or.b32 %y, %r3, %r4; or.b32 %y, %y, %r5;"
            "or.b32 %y, %y, %r6;")
    c = (np.arange(N) % 3 == 0).astype(np.uint32)
    got = _run(engine, body, [("u32", PAIRS), ("u32", PAIRS2), ("u32", c)], "u32")
    with np.errstate(invalid="ignore"):
        lo, hi = (fn(a, b) for a, b in zip(_halves(PAIRS), _halves(PAIRS2), strict=True))
    cb = c.astype(bool)
    want = lo * 1 | hi * 2 | (lo ^ cb) * 4 | (hi ^ cb) * 8
    assert np.array_equal(got, want.astype(np.uint32))
