"""Kernels written as public CUDA suites write them (tests/ptx/data/suite.cu) vs numpy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from .helpers import Device, load

MOD = load("suite")


@pytest.fixture
def dev():
    return Device()


def test_matrix_mul_samples(dev):
    rng = np.random.default_rng(31)
    h, w, wb = 32, 48, 64
    a = rng.integers(-4, 5, (h, w)).astype(np.float32)
    b = rng.integers(-4, 5, (w, wb)).astype(np.float32)
    pa, pb, pc = dev.put(a), dev.put(b), dev.alloc(h * wb * 4)
    dev.launch(MOD, "matrixMul", (wb // 16, h // 16, 1), (16, 16, 1), pc, pa, pb, w, wb)
    assert np.array_equal(dev.get(pc, h * wb, np.float32).reshape(h, wb), a @ b)


@pytest.mark.parametrize("n,grid", [(100000, 8), (513, 1), (4096, 3)])
def test_reduce6_warp_synchronous_tail(dev, n, grid):
    x = np.random.default_rng(n).integers(-100, 100, n).astype(np.int32)
    px, po = dev.put(x), dev.alloc(grid * 4)
    dev.launch(MOD, "reduce6", (grid,), (256,), px, po, n)
    assert dev.get(po, grid, np.int32).sum() == x.sum()


@pytest.mark.parametrize("n", [8, 64, 512])
def test_prescan_gems(dev, n):
    x = np.random.default_rng(n).integers(0, 10, n).astype(np.float32)
    px, po = dev.put(x), dev.alloc(n * 4)
    dev.launch(MOD, "prescan", (1,), (n // 2,), po, px, n, shared=n * 4)
    assert np.array_equal(dev.get(po, n, np.float32), np.r_[0, np.cumsum(x)[:-1]])


@pytest.mark.parametrize("n", [32, 256, 1024])
def test_bitonic_sort(dev, n):
    x = np.random.default_rng(n).integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    px = dev.put(x)
    dev.launch(MOD, "bitonicSort", (1,), (n,), px, shared=n * 4)
    assert np.array_equal(dev.get(px, n, np.uint32), np.sort(x))


def _cnd(d: float) -> float:
    return 0.5 * math.erfc(-d / math.sqrt(2))


def test_black_scholes(dev):
    rng = np.random.default_rng(33)
    n = 1000
    s = rng.uniform(5, 30, n).astype(np.float32)
    x = rng.uniform(1, 100, n).astype(np.float32)
    t = rng.uniform(0.25, 10, n).astype(np.float32)
    r, v = 0.02, 0.30
    ps, px, pt = dev.put(s), dev.put(x), dev.put(t)
    pcall, pput = dev.alloc(n * 4), dev.alloc(n * 4)
    dev.launch(MOD, "BlackScholesGPU", (4,), (128,), pcall, pput, ps, px, pt, r, v, n)
    call, put = dev.get(pcall, n, np.float32), dev.get(pput, n, np.float32)
    for k in range(n):
        sk, xk, tk = float(s[k]), float(x[k]), float(t[k])
        sq = math.sqrt(tk)
        d1 = (math.log(sk / xk) + (r + 0.5 * v * v) * tk) / (v * sq)
        d2 = d1 - v * sq
        e = math.exp(-r * tk)
        c = sk * _cnd(d1) - xk * e * _cnd(d2)
        p = xk * e * (1 - _cnd(d2)) - sk * (1 - _cnd(d1))
        assert call[k] == pytest.approx(c, abs=1e-3 * max(1, abs(c)))
        assert put[k] == pytest.approx(p, abs=1e-3 * max(1, abs(p)))


def test_nbody_tiles(dev):
    rng = np.random.default_rng(34)
    n, block = 256, 64
    pos = rng.uniform(-1, 1, (n, 4)).astype(np.float32)
    pos[:, 3] = rng.uniform(0.5, 1, n)
    pp, pa = dev.put(pos), dev.alloc(n * 16)
    dev.launch(MOD, "nbody", (n // block,), (block,), pp, pa, n, 0.01, shared=block * 16)
    acc = dev.get(pa, n * 4, np.float32).reshape(n, 4)[:, :3]
    r = pos[None, :, :3] - pos[:, None, :3]
    d2 = (r ** 2).sum(-1) + 0.01
    exp = (r * (pos[None, :, 3] / d2 ** 1.5)[..., None]).sum(1)
    assert np.allclose(acc, exp, rtol=1e-4, atol=1e-4)
