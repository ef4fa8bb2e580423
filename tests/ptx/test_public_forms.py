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


def _bf16_model(x: np.ndarray, relu: bool = False) -> np.ndarray:
    """float64 values rounded once to bf16 bits, independently of ptx/bf16.py: of the bf16
    values just below and above |x| the nearer (ties to the even one); NaN -> 0x7FFF;
    .relu: negative -> 0."""
    out = []
    for v in x.tolist():
        if v != v or (relu and v < 0):
            out.append(0x7FFF if v != v else 0)
            continue
        sign, mag = (0x8000 if np.signbit(v) else 0), abs(v)
        if mag == np.inf:
            out.append(sign | 0x7F80)
            continue
        f = np.float32(min(mag, 3.4028234663852886e38))
        if float(f) > mag:
            f = np.nextafter(f, np.float32(0))
        lo = int(f.view(np.uint32)) >> 16             # the bf16 at or below |x|
        down, up = _bf16_f(lo), _bf16_f(lo + 1)
        tie_even = mag - down == up - mag and lo % 2 == 0
        out.append(sign | (lo if mag - down < up - mag or tie_even else lo + 1))
    return np.array(out, np.uint16)


def _bf16_f(bits: int) -> float:
    """The magnitude of bf16 pattern ``bits`` (0x7F80: 2^128, the first value past the
    largest, as round-to-nearest sees it)."""
    return float(np.uint32(bits << 16).view(np.float32)) if bits < 0x7F80 else 2.0 ** 128


def _bf16_values(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)


BF = np.concatenate([np.random.default_rng(12).standard_normal(N - 12) *
                     np.exp2(np.random.default_rng(13).integers(-130, 127, N - 12)),
                     [1 + 2 ** -8, 1 + 3 * 2 ** -8, -(1 + 2 ** -8), 3.4e38, -3.39e38, np.inf,
                      -np.inf, np.nan, 0.0, -0.0, 1e-40, -2.5]]).astype(np.float32)


@pytest.mark.parametrize("relu", [False, True])
def test_cvt_f32_to_bf16_and_back(engine, relu):
    mod = ".relu" if relu else ""
    with np.errstate(over="ignore"):
        got = _run(engine, f"cvt.rn{mod}.bf16.f32 %rs3, %x0; cvt.f32.bf16 %f3, %rs3;"
                   "mov.b32 %r3, %f3; cvt.u32.u16 %r4, %rs3; shl.b32 %r4, %r4, 16;"
                   "xor.b32 %y, %r3, %r4;", [("f32", BF)], "u32")
        pair = _run(engine, f"cvt.rn{mod}.bf16x2.f32 %y, %x0, %x1;",
                    [("f32", BF), ("f32", BF[::-1].copy())], "u32")
    want = _bf16_model(BF.astype(np.float64), relu)
    assert np.array_equal(got, np.zeros(N, np.uint32))          # back to f32 exactly
    assert np.array_equal(pair >> 16, want.astype(np.uint32))
    assert np.array_equal(pair & 0xFFFF, want[::-1].astype(np.uint32))


@pytest.mark.parametrize("relu", [False, True])
def test_fma_bf16_rounds_once(engine, relu):
    rng = np.random.default_rng(14)
    vals = [_bf16_model(rng.standard_normal(N) * 3) for _ in range(3)]
    vals[2][:8] = _bf16_model(np.array([1e30, -1e30, np.nan, 0, -0.0, 1e-3, 2, -2]))
    mod = ".relu" if relu else ""
    one = _run(engine, f"fma.rn{mod}.bf16 %rs3, %x0, %x1, %x2; cvt.u32.u16 %y, %rs3;",
               [("u16", vals[0]), ("u16", vals[1]), ("u16", vals[2])], "u32")
    words = [v.astype(np.uint32) | (np.roll(v, 5).astype(np.uint32) << 16) for v in vals]
    two = _run(engine, f"fma.rn{mod}.bf16x2 %y, %x0, %x1, %x2;",
               [("u32", w) for w in words], "u32")
    f = [_bf16_values(v) for v in vals]
    want = _bf16_model(f[0] * f[1] + f[2], relu)
    assert np.array_equal(one, want.astype(np.uint32))
    rolled = [np.roll(x, 5) for x in f]
    hi = _bf16_model(rolled[0] * rolled[1] + rolled[2], relu)
    assert np.array_equal(two, want.astype(np.uint32) | (hi.astype(np.uint32) << 16))
