"""Shared-memory reductions (tree, grid-stride min/max, warp shuffles) and atomic histograms
on random inputs whose lengths are and are not multiples of the block."""

import numpy as np
import pytest

from . import reference as ref
from .harness import cdiv

LENGTHS = [1, 100, 512, 1000, 4099]


@pytest.mark.parametrize("block", [32, 128, 256])
@pytest.mark.parametrize("n", LENGTHS)
def test_reduce_sum_f32(dev, rng, n, block):
    x = rng.standard_normal(n, dtype=np.float32)
    grid = cdiv(n, 2 * block)
    px, pp = dev.upload(x), dev.zeros(4 * grid)
    dev.launch("reduce", "reduce_sum_f32", grid, block, [px, pp, n], shared_dynamic=4 * block)
    got = dev.download(pp, np.float32, grid)
    np.testing.assert_allclose(got, ref.reduce_sum_f32(x, block), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("block,grid", [(64, 1), (128, 3), (256, 8)])
@pytest.mark.parametrize("n", [0, 1, 777, 5000])
def test_reduce_stats_u32(dev, rng, n, block, grid):
    x = rng.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32)
    px, pp = dev.upload(x), dev.zeros(12 * grid)
    dev.launch("reduce", "reduce_stats_u32", grid, block, [px, pp, n])
    got = dev.download(pp, np.uint32, (grid, 3))
    np.testing.assert_array_equal(got, ref.reduce_stats_u32(x, block, grid))


@pytest.mark.parametrize("block", [32, 64, 256])
@pytest.mark.parametrize("n", LENGTHS)
def test_reduce_sum_shfl_s32(dev, rng, n, block):
    x = rng.integers(-(2**31), 2**31, size=n, dtype=np.int64).astype(np.int32)
    grid = cdiv(n, block)
    px, pp = dev.upload(x), dev.zeros(4 * grid)
    dev.launch("reduce", "reduce_sum_shfl_s32", grid, block, [px, pp, n])
    np.testing.assert_array_equal(dev.download(pp, np.int32, grid),
                                  ref.reduce_sum_shfl_s32(x, block))


@pytest.mark.parametrize("nbins", [1, 7, 256, 1000])
@pytest.mark.parametrize("n,grid,block", [(1, 1, 32), (1000, 2, 128), (6001, 4, 256)])
def test_histogram_shared(dev, rng, n, grid, block, nbins):
    x = rng.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32)
    px, pb = dev.upload(x), dev.zeros(4 * nbins)
    dev.launch("histogram", "histogram_shared", grid, block, [px, n, pb, nbins],
               shared_dynamic=4 * nbins)
    np.testing.assert_array_equal(dev.download(pb, np.uint32, nbins), ref.histogram(x, nbins))


@pytest.mark.parametrize("n,grid,block", [(1, 1, 1), (999, 3, 64), (4096, 2, 256)])
def test_histogram_bytes_global(dev, rng, n, grid, block):
    x = rng.integers(0, 256, size=n, dtype=np.uint8)
    x[: n // 3] = 42  # heavy contention on one bin
    px, pb = dev.upload(x), dev.zeros(4 * 256)
    dev.launch("histogram", "histogram_bytes_global", grid, block, [px, n, pb])
    np.testing.assert_array_equal(dev.download(pb, np.uint32, 256), ref.histogram(x, 256))


@pytest.mark.parametrize("n,nkeys", [(1, 1), (500, 3), (2000, 50)])
def test_scatter_atomics(dev, rng, n, nkeys):
    key = rng.integers(0, nkeys, size=n).astype(np.uint32)
    w = rng.standard_normal(n, dtype=np.float32)
    v = rng.integers(-(2**31), 2**31, size=n, dtype=np.int64).astype(np.int32)
    sums = dev.zeros(4 * nkeys)
    mins = dev.upload(np.full(nkeys, 2**31 - 1, dtype=np.int32))
    maxs = dev.upload(np.full(nkeys, -(2**31), dtype=np.int32))
    args = [dev.upload(key), dev.upload(w), dev.upload(v), n, sums, mins, maxs]
    dev.launch("histogram", "scatter_atomics", cdiv(n, 128), 128, args)
    want_sums, want_mins, want_maxs = ref.scatter_atomics(key, w, v, nkeys)
    np.testing.assert_allclose(dev.download(sums, np.float32, nkeys), want_sums,
                               rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(dev.download(mins, np.int32, nkeys), want_mins)
    np.testing.assert_array_equal(dev.download(maxs, np.int32, nkeys), want_maxs)
