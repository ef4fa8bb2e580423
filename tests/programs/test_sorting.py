"""tests/programs/cuda/sorting.cu on both engines: 256-bin and per-warp histograms with
shared atomics, bitonic sort of key/value pairs in dynamic shared memory, and a global
bitonic sort driven by a host loop of launches, against numpy (all exact)."""

from __future__ import annotations

import numpy as np
import pytest

from .runner import params, run_both

ALL = params("sorting")


@pytest.mark.parametrize("variant", ALL)
def test_histogram256(variant):
    words = np.random.default_rng(1).integers(0, 1 << 32, 3000, dtype=np.uint64)
    words = words.astype(np.uint32)
    words[:500] = 0x07070707          # contention on one bin

    def host(gpu, mod):
        pd, ph = gpu.put(words), gpu.put(np.zeros(256, np.uint32))
        gpu.run("histogram256", (4,), (192,), pd, ph, words.size)
        return {"hist": gpu.get(ph, 256, np.uint32)}
    ref, got = run_both(variant, host)
    assert np.array_equal(got["hist"], np.bincount(words.view(np.uint8), minlength=256))


@pytest.mark.parametrize("variant", ALL)
def test_histogram64_per_warp(variant):
    data = np.random.default_rng(2).integers(0, 256, 4 * 1500).astype(np.uint8)

    def host(gpu, mod):
        pd, ph = gpu.put(data), gpu.put(np.zeros(64, np.uint32))
        gpu.run("histogram64_warps", (3,), (128,), pd, ph, data.size // 4, shared=64 * 4 * 4)
        return {"hist": gpu.get(ph, 64, np.uint32)}
    ref, got = run_both(variant, host)
    assert np.array_equal(got["hist"], np.bincount(data >> 2, minlength=64))


@pytest.mark.parametrize("variant", ALL)
@pytest.mark.parametrize("direction", [0, 1])
def test_bitonic_shared(variant, direction):
    block, blocks = 128, 3
    m = 2 * block
    rng = np.random.default_rng(direction)
    keys = rng.permutation(blocks * m).astype(np.uint32)     # distinct keys: one answer
    vals = np.arange(blocks * m, dtype=np.uint32)

    def host(gpu, mod):
        pk, pv = gpu.put(keys), gpu.put(vals)
        gpu.run("bitonic_shared", (blocks,), (block,), pk, pv, direction, shared=2 * m * 4)
        return {"k": gpu.get(pk, keys.size, np.uint32), "v": gpu.get(pv, keys.size, np.uint32)}
    ref, got = run_both(variant, host)
    for b in range(blocks):
        seg = slice(b * m, (b + 1) * m)
        order = np.argsort(keys[seg])
        if not direction:
            order = order[::-1]
        assert np.array_equal(got["k"][seg], keys[seg][order])
        assert np.array_equal(got["v"][seg], vals[seg][order])


@pytest.mark.parametrize("variant", ALL)
def test_bitonic_global_host_loop(variant):
    n = 512
    a = np.random.default_rng(3).standard_normal(n).astype(np.float32)

    def host(gpu, mod):
        pa = gpu.put(a)
        k = 2
        while k <= n:
            j = k // 2
            while j > 0:
                gpu.run("bitonic_step", (n // 128,), (128,), pa, j, k)
                j //= 2
            k *= 2
        return {"a": gpu.get(pa, n, np.float32)}
    ref, got = run_both(variant, host)
    assert np.array_equal(got["a"], np.sort(a))
