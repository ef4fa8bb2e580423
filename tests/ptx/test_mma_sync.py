"""``mma.sync`` (f16, bf16, tf32, s8 x u8 with ``.satfinite``, f64), ``ldmatrix`` (also
``.trans``), ``stmatrix`` and ``movmatrix`` (tests/ptx/data/mma_sync.cu, inline PTX as
public kernels write it, nvcc -arch=sm_90) on both engines against numpy.  The kernels place
each lane's elements by the PTX ISA's fragment tables, and the ldmatrix kernel feeds mma
through ldmatrix, so a product comes out right only if the engines' ldmatrix and mma
layouts agree with each other and with the ISA."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from .helpers import Device, load

MOD = load("mma_sync")


def _f16(rng, shape) -> np.ndarray:
    """Random f16 multiples of 1/64 in [-2, 2): every product and sum exact in double."""
    return (rng.integers(-128, 128, shape) / 64).astype(np.float16)


def _bf16_bits(x: np.ndarray) -> np.ndarray:
    return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def _launch(kernel: str, *arrays, outs: list[tuple[int, type]]):
    dev = Device()
    ptrs = [dev.put(np.ascontiguousarray(a)) for a in arrays]
    optr = [dev.alloc(n * np.dtype(t).itemsize) for n, t in outs]
    dev.launch(MOD, kernel, (1,), (32,), *ptrs, *optr)
    return [dev.get(p, n, t) for p, (n, t) in zip(optr, outs, strict=True)]


def test_ldmatrix_feeds_f16_mma(engine):
    rng = np.random.default_rng(1)
    a, b = _f16(rng, (16, 16)), _f16(rng, (16, 8))
    c = rng.uniform(-4, 4, (16, 8)).astype(np.float32)
    (d,) = _launch("hmma_ldmatrix", a.view(np.uint16), b.T.copy().view(np.uint16),
                   b.view(np.uint16), c, outs=[(256, np.float32)])
    want = (a.astype(np.float64) @ b.astype(np.float64) + c).astype(np.float32)
    assert np.array_equal(d[:128].reshape(16, 8), want)      # B^T through ldmatrix
    assert np.array_equal(d[128:].reshape(16, 8), want)      # B through ldmatrix.trans


def test_bf16_mma_and_f16_accumulating_mma(engine):
    rng = np.random.default_rng(2)
    a = rng.uniform(-2, 2, (16, 16)).astype(np.float32)
    bt = rng.uniform(-2, 2, (8, 16)).astype(np.float32)
    ab, bb = _bf16_bits(a), _bf16_bits(bt)
    c = rng.uniform(-4, 4, (16, 8)).astype(np.float32)
    a16, bt16 = _f16(rng, (16, 16)), _f16(rng, (8, 16))
    c16 = _f16(rng, (16, 8))
    d, _ = _launch("hmma_direct", ab, bb, c, c16.view(np.uint16), outs=[(128, np.float32),
                                                                       (128, np.uint16)])
    av = (ab.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    bv = (bb.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    assert np.array_equal(d.reshape(16, 8), (av @ bv.T + c).astype(np.float32))
    _, d16 = _launch("hmma_direct", a16.view(np.uint16), bt16.view(np.uint16), c, c16.view(
        np.uint16), outs=[(128, np.float32), (128, np.uint16)])
    want16 = (a16[:, :8].astype(np.float64) @ bt16[:, :8].T.astype(np.float64) + c16)
    assert np.array_equal(d16.view(np.float16).reshape(16, 8), want16.astype(np.float16))


def test_tf32_mma_reads_the_top_19_bits(engine):
    rng = np.random.default_rng(3)
    a = rng.uniform(-2, 2, (16, 8)).astype(np.float32)
    bt = rng.uniform(-2, 2, (8, 8)).astype(np.float32)
    c = rng.uniform(-2, 2, (16, 8)).astype(np.float32)
    (d,) = _launch("tf32_mma", a.view(np.uint32), bt.view(np.uint32), c,
                   outs=[(128, np.float32)])
    cut = lambda x: (x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)  # noqa: E731
    want = (cut(a).astype(np.float64) @ cut(bt).T.astype(np.float64) + c).astype(np.float32)
    assert np.array_equal(d.reshape(16, 8), want)


def test_mixed_sign_int8_mma_saturates(engine):
    rng = np.random.default_rng(4)
    a = rng.integers(-128, 128, (16, 32)).astype(np.int8)
    bt = rng.integers(0, 256, (8, 32)).astype(np.uint8)
    c = rng.integers(-2**31, 2**31, (16, 8), dtype=np.int64)
    c[::3] = 2**31 - 10
    (d,) = _launch("imma", a, bt, c.astype(np.int32), outs=[(128, np.int32)])
    exact = a.astype(np.int64) @ bt.T.astype(np.int64) + c
    want = np.clip(exact, -2**31, 2**31 - 1)
    assert np.array_equal(d.reshape(16, 8), want) and not np.array_equal(exact, want)


def test_f64_mma_is_an_fma_chain(engine):
    rng = np.random.default_rng(5)
    a, bt, c = rng.standard_normal((8, 4)), rng.standard_normal((8, 4)), rng.standard_normal(
        (8, 8))
    (d,) = _launch("dmma", a, bt, c, outs=[(64, np.float64)])
    want = np.empty((8, 8))
    for i in range(8):
        for j in range(8):
            acc = Fraction(float(c[i, j]))
            for k in range(4):
                acc = Fraction(float(Fraction(float(a[i, k])) * Fraction(float(bt[j, k])) + acc))
            want[i, j] = float(acc)
    assert np.array_equal(d.reshape(8, 8), want)


def test_movmatrix_and_stmatrix(engine):
    m = np.arange(64, dtype=np.uint16).reshape(8, 8) * np.uint16(3) + np.uint16(1000)
    (out,) = _launch("move_store", m, outs=[(192, np.uint16)])
    assert np.array_equal(out[:64].reshape(8, 8), m.T)
    assert np.array_equal(out[64:128].reshape(8, 8), m.T)
    assert np.array_equal(out[128:].reshape(8, 8), m)


@pytest.mark.parametrize("engine", ["jit"], indirect=True)
def test_the_compiled_engine_translates_them(engine):
    MOD.start_compile(wait=True)
    assert {k: MOD.jit.engine_of(k) for k in MOD.kernels} == dict.fromkeys(MOD.kernels, "jit"), \
        MOD.jit.compiled.rejected
