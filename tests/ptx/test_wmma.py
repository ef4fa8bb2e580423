"""Tensor-core WMMA (nvcc-compiled) against numpy matrix products."""

from __future__ import annotations

import numpy as np

from .helpers import Device, load

MOD = load("wmma")


def test_wmma_gemm_16x16x16_f32_accumulate():
    n = 32
    rng = np.random.default_rng(21)
    a = rng.integers(-3, 4, (n, n)).astype(np.float16)
    b = rng.integers(-3, 4, (n, n)).astype(np.float16)       # B[k, j]
    dev = Device()
    pa = dev.put(a)
    pb = dev.put(np.ascontiguousarray(b.T))                    # col-major B
    pc = dev.alloc(n * n * 4)
    dev.launch(MOD, "wmma_gemm", (1, n // 16, 1), (32 * n // 16, 1, 1), pa, pb, pc, n)
    got = dev.get(pc, n * n, np.float32).reshape(n, n)
    assert np.array_equal(got, 2 * (a.astype(np.float32) @ b.astype(np.float32)))


def test_wmma_32x8x16_shared_col_major_half_accumulator():
    rng = np.random.default_rng(22)
    a = (rng.integers(-4, 5, (32, 16)) / 4).astype(np.float16)
    b = (rng.integers(-4, 5, (16, 8)) / 2).astype(np.float16)
    c = rng.integers(-8, 9, (32, 8)).astype(np.float16)
    dev = Device()
    pa = dev.put(np.ascontiguousarray(a.T))                    # col-major A, ld = 32
    pb, pc = dev.put(b), dev.put(c)
    dev.launch(MOD, "wmma_32x8", (1,), (32,), pa, pb, pc)
    got = dev.get(pc, 32 * 8, np.float16).reshape(8, 32).T     # stored col-major
    exp = (a.astype(np.float32) @ b.astype(np.float32) + c).astype(np.float16)
    assert np.array_equal(got, exp)
