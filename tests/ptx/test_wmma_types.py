"""WMMA of every element type (tests/ptx/data/wmma_types.cu, nvcc -arch=sm_80) on both
engines against numpy: bf16 (three shapes), tf32 (truncated, and rounded by
``__float_to_tf32``), s8/u8 (wrapping and ``.satfinite``), f64 (single-rounded fma chain),
A/B in row and column layouts, C and D in either layout, leading dimensions wider than the
tile, the ``.shared`` state space; and ``cvt.{rna,rn,rz}.tf32.f32`` alone."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from gdevd.gpu.ptx import load_module
from gdevd.gpu.ptx.errors import PtxError

from .helpers import Device, load
from .isa import kernel_text, run_snippet

MOD = load("wmma_types")
SHAPES = {"m16n16k16": (16, 16, 16), "m32n8k16": (32, 8, 16), "m8n32k16": (8, 32, 16),
          "m16n16k8": (16, 16, 8), "m8n8k4": (8, 8, 4)}
PAD = 8      # every leading dimension is the tile's plus PAD


def _bf16(x: np.ndarray) -> np.ndarray:
    """float32 values rounded to bf16 (nearest even), as raw uint16 bits."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def _bf16_value(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def _tf32(x: np.ndarray, mode: str) -> np.ndarray:
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    add = {"rz": 0, "rna": 0x1000, "rn": 0xFFF + ((bits >> 13) & 1)}[mode]
    return ((bits + add) & 0xFFFFE000).astype(np.uint32).view(np.float32)


def _store(mat: np.ndarray, col: bool) -> tuple[np.ndarray, int]:
    """``mat`` laid out row- or column-major with PAD extra elements per line."""
    lines = mat.T if col else mat
    ld = lines.shape[1] + PAD
    out = np.zeros((lines.shape[0], ld), mat.dtype)
    out[:, :lines.shape[1]] = lines
    return out, ld


def _run(kernel: str, a, b, c, a_col, b_col, c_col, d_col):
    """Launch one warp of ``kernel``; returns D (logical rows x cols)."""
    dev = Device()
    (sa, lda), (sb, ldb), (sc, ldc) = _store(a, a_col), _store(b, b_col), _store(c, c_col)
    m, n = c.shape
    lines, ldd = (n, m + PAD) if d_col else (m, n + PAD)
    pd = dev.alloc(lines * ldd * c.itemsize)
    dev.launch(MOD, kernel, (1,), (32,), dev.put(sa), dev.put(sb), dev.put(sc), pd, lda, ldb,
               ldc, ldd, int(c_col), int(d_col))
    got = dev.get(pd, lines * ldd, c.dtype).reshape(lines, ldd)
    return got[:, :m].T if d_col else got[:, :n]


def _layouts(kernel: str) -> tuple[bool, bool]:
    tag = kernel.split("_")[2]
    return tag[0] == "c", tag[1] == "c"


BF16 = ["bf16_m16n16k16_rc", "bf16_m16n16k16_cr", "bf16_m32n8k16_rr", "bf16_m8n32k16_cc"]


@pytest.mark.parametrize("kernel", BF16)
@pytest.mark.parametrize("c_col,d_col", [(False, False), (True, False), (False, True)])
def test_bf16_products_are_exact_and_summed_in_fp32(engine, kernel, c_col, d_col):
    m, n, k = SHAPES[kernel.split("_")[1]]
    rng = np.random.default_rng(len(kernel) + 2 * c_col + d_col)
    a = _bf16(rng.uniform(-4, 4, (m, k)))
    b = _bf16(rng.uniform(-4, 4, (k, n)))
    c = rng.uniform(-8, 8, (m, n)).astype(np.float32)
    # 16-bit products summed with a 24-bit C: exact in float64 in any order, one rounding
    want = (_bf16_value(a) @ _bf16_value(b) + c).astype(np.float32)
    a_col, b_col = _layouts(kernel)
    got = _run(kernel, a, b, c, a_col, b_col, c_col, d_col)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("kernel,mode", [("tf32_m16n16k8_rc", "rz"),
                                         ("tf32_m16n16k8_cr_rna", "rna")])
def test_tf32_inputs_lose_their_low_bits(engine, kernel, mode):
    rng = np.random.default_rng(5)
    a = rng.uniform(-2, 2, (16, 8)).astype(np.float32)
    b = rng.uniform(-2, 2, (8, 16)).astype(np.float32)
    c = rng.uniform(-2, 2, (16, 16)).astype(np.float32)
    ta, tb = (_tf32(x, mode).astype(np.float64) for x in (a, b))
    want = (ta @ tb + c).astype(np.float32)
    a_col, b_col = _layouts(kernel)
    got = _run(kernel, a, b, c, a_col, b_col, True, False)
    assert np.array_equal(got, want)
    exact = (a.astype(np.float64) @ b + c).astype(np.float32)
    assert not np.array_equal(got, exact)        # the rounding is visible


@pytest.mark.parametrize("kernel", ["s8_m16n16k16_rc", "s8_m32n8k16_cr", "u8_m8n32k16_rr",
                                    "u8_m16n16k16_cc", "s8_m16n16k16_sat"])
def test_int8_products_accumulate_in_s32(engine, kernel):
    m, n, k = SHAPES[kernel.split("_")[1]]
    signed = kernel.startswith("s8")
    dt = np.int8 if signed else np.uint8
    rng = np.random.default_rng(len(kernel))
    lo, hi = (-128, 128) if signed else (0, 256)
    a = rng.integers(lo, hi, (m, k)).astype(dt)
    b = rng.integers(lo, hi, (k, n)).astype(dt)
    # C near the ends of the s32 range, so some sums leave it
    c = rng.integers(-2**31, 2**31, (m, n), dtype=np.int64)
    c[::2] = np.sign(c[::2]) * (2**31 - 1000) - (c[::2] < 0)
    exact = a.astype(np.int64) @ b.astype(np.int64) + c
    sat = kernel.endswith("sat")
    want = np.clip(exact, -2**31, 2**31 - 1) if sat else exact
    a_col, b_col = (False, False) if sat else _layouts(kernel)
    got = _run(kernel, a, b, c.astype(np.int32), a_col, b_col, False, True)
    assert np.array_equal(got, want.astype(np.int64).astype(np.uint32).view(np.int32))
    assert sat or not np.array_equal(exact, want.astype(np.int32))  # some wrapped


def _fma_chain(a, b, c) -> np.ndarray:
    out = np.empty(c.shape)
    for i in range(c.shape[0]):
        for j in range(c.shape[1]):
            acc = Fraction(float(c[i, j]))
            for k in range(a.shape[1]):
                acc = Fraction(float(Fraction(float(a[i, k])) * Fraction(float(b[k, j])) + acc))
            out[i, j] = float(acc)
    return out


@pytest.mark.parametrize("kernel", ["f64_m8n8k4_rc", "f64_m8n8k4_cr"])
def test_f64_is_a_chain_of_single_rounded_fmas(engine, kernel):
    rng = np.random.default_rng(9)
    a, b, c = rng.standard_normal((8, 4)), rng.standard_normal((4, 8)), rng.standard_normal((8, 8))
    a_col, b_col = _layouts(kernel)
    got = _run(kernel, a, b, c, a_col, b_col, False, False)
    assert np.array_equal(got, _fma_chain(a, b, c))


def test_bf16_through_shared_memory_with_a_scaled_accumulator(engine):
    rng = np.random.default_rng(3)
    a, b = _bf16(rng.uniform(-1, 1, (16, 16))), _bf16(rng.uniform(-1, 1, (16, 16)))
    c = rng.uniform(-1, 1, (16, 16)).astype(np.float32)
    dev = Device()
    pd = dev.alloc(256 * 4)
    # B is col-major with ld 16: pass B^T row-major
    dev.launch(MOD, "bf16_shared_scaled", (1,), (32,), dev.put(a), dev.put(b.T.copy()),
               dev.put(c), pd, 16, 16, 16, 16, 0, 0)
    want = (_bf16_value(a) @ _bf16_value(b) + 2 * c.astype(np.float64)).astype(np.float32)
    assert np.array_equal(dev.get(pd, 256, np.float32).reshape(16, 16), want)


@pytest.mark.parametrize("mode", ["rna", "rn", "rz"])
def test_cvt_to_tf32(engine, mode):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(256).astype(np.float32)
    x[:8] = [np.inf, -np.inf, np.nan, 0.0, -0.0, 3.4028235e38, 1e-40, 1.0 + 2**-11]
    # exact ties: the 14th bit set and nothing below it
    x[8:16] = (np.arange(8, dtype=np.uint32) << 14 | 0x3F801000).view(np.float32)
    got = run_snippet(f"cvt.{mode}.tf32.f32 %r5, %x0; mov.b32 %y, %r5;", [("f32", x)], "u32")
    want = _tf32(x, mode).view(np.uint32)
    special = ~np.isfinite(x)
    want[special] = x[special].view(np.uint32)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("form", [
    "wmma.load.a.sync.aligned.row.m16n16k8.bf16 {%r1, %r2, %r3, %r4}, [%ad0];",
    "wmma.load.c.sync.aligned.row.m8n8k4.f32 {%f1, %f2}, [%ad0];",
    "wmma.mma.sync.aligned.row.col.m16n16k16.f32.s8.s8.s32 {%f1, %f1, %f1, %f1, %f1, %f1, "
    "%f1, %f1}, {%r1, %r2}, {%r1, %r2}, {%r1, %r1, %r1, %r1, %r1, %r1, %r1, %r1};",
    "wmma.mma.sync.aligned.row.col.m8n8k4.f64.f64.f64.f64 {%fd1, %fd2}, {%fd1}, {%fd1}, "
    "{%fd1, %fd2};",
    "cvt.rm.tf32.f32 %r1, %f1;"])
def test_malformed_forms_are_refused_at_load(form):
    with pytest.raises(PtxError):
        load_module(kernel_text(["u32"], "u32", form + "mov.u32 %y, 0;"), "bad")


@pytest.mark.parametrize("engine", ["jit"], indirect=True)
def test_the_compiled_engine_translates_every_wmma_kernel(engine):
    for name in ("wmma_types", "wmma"):
        mod = load(name)
        mod.start_compile(wait=True)
        assert {k: mod.jit.engine_of(k) for k in mod.kernels} == \
            dict.fromkeys(mod.kernels, "jit"), mod.jit.compiled.rejected
