"""The paper's micro-benchmarks (MADD, MMUL naive and tiled, float variants, LOOP, IDLE) on
random inputs, sizes that are and are not multiples of the 16x16 block."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from . import reference as ref
from .conftest import BACKENDS
from .harness import cdiv

SIZES = [1, 5, 16, 37, 64]


def _u32(rng, shape):
    return rng.integers(0, 2**32, size=shape, dtype=np.uint64).astype(np.uint32)


def _run_matrix(dev, file, kernel, a, b):
    n = a.shape[0]
    pa, pb, pc = dev.upload(a), dev.upload(b), dev.zeros(a.nbytes)
    dev.launch(file, kernel, (cdiv(n, 16), cdiv(n, 16)), (16, 16), [pa, pb, pc, n])
    return dev.download(pc, a.dtype, a.shape)


@pytest.mark.parametrize("n", SIZES)
def test_madd(dev, rng, n):
    a, b = _u32(rng, (n, n)), _u32(rng, (n, n))
    np.testing.assert_array_equal(_run_matrix(dev, "madd", "add", a, b), ref.madd(a, b))


@pytest.mark.parametrize("n", SIZES)
def test_fmadd(dev, rng, n):
    a, b = rng.standard_normal((2, n, n), dtype=np.float32)
    np.testing.assert_array_equal(_run_matrix(dev, "fmadd", "add", a, b), ref.madd(a, b))


@pytest.mark.parametrize("kernel", ["multiply", "multiply_tiled"])
@pytest.mark.parametrize("n", SIZES)
def test_mmul(dev, rng, kernel, n):
    a, b = _u32(rng, (n, n)), _u32(rng, (n, n))
    np.testing.assert_array_equal(_run_matrix(dev, "mmul", kernel, a, b), ref.mmul(a, b))


@pytest.mark.parametrize("kernel", ["multiply", "multiply_tiled"])
@pytest.mark.parametrize("n", SIZES)
def test_fmmul(dev, rng, kernel, n):
    a, b = rng.standard_normal((2, n, n), dtype=np.float32)
    got = _run_matrix(dev, "fmmul", kernel, a, b)
    np.testing.assert_allclose(got, ref.mmul(a, b), rtol=1e-4, atol=1e-4 * n)


@settings(max_examples=15, deadline=None)
@given(size=st.integers(1, 700), n=st.integers(0, 40), block=st.sampled_from([32, 96, 256]))
def test_loop(size, n, block):
    for backend in BACKENDS.values():
        dev = backend()
        data = dev.upload(np.full(size, 0xDEADBEEF, dtype=np.uint32))
        dev.launch("loop", "loop", cdiv(size, block), block, [data, size, n])
        np.testing.assert_array_equal(dev.download(data, np.uint32, size), ref.loop(size, n))


def test_loop_leaves_memory_past_size(dev):
    data = dev.upload(np.full(300, 7, dtype=np.uint32))
    dev.launch("loop", "loop", 2, 256, [data, 100, 9])
    got = dev.download(data, np.uint32, 300)
    np.testing.assert_array_equal(got[:100], ref.loop(100, 9))
    assert (got[100:] == 7).all()


@pytest.mark.parametrize("n", [0, 1, 1000])
def test_idle(dev, n):
    out = dev.upload(np.array([12345], dtype=np.uint32))
    dev.launch("loop", "idle", 1, 1, [out, n])
    assert dev.download(out, np.uint32, 1)[0] == n


@pytest.mark.slow
@pytest.mark.parametrize("file,kernel", [("mmul", "multiply"), ("mmul", "multiply_tiled"),
                                         ("fmmul", "multiply_tiled")])
def test_mmul_256(dev, rng, file, kernel):
    n = 256
    if file == "mmul":
        a, b = _u32(rng, (n, n)), _u32(rng, (n, n))
        np.testing.assert_array_equal(_run_matrix(dev, file, kernel, a, b), ref.mmul(a, b))
    else:
        a, b = rng.standard_normal((2, n, n), dtype=np.float32)
        np.testing.assert_allclose(_run_matrix(dev, file, kernel, a, b), ref.mmul(a, b),
                                   rtol=1e-4, atol=1e-3)
