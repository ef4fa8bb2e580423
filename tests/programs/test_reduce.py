"""tests/programs/cuda/reduce.cu on both engines: the shared-memory tree with a
warp-synchronous tail, shuffle reductions with integer atomics, float/double atomics,
the Blelloch scan (dynamic shared memory, bank-conflict padding, a host-driven second
pass) and the warp-shuffle scan, against numpy.

Float sums in a fixed order must match between engines bit for bit and stay within
n * 2^-23 of the exact sum of magnitudes; float atomics meet in an order that differs
between runs, so their results are compared only against that bound."""

from __future__ import annotations

import numpy as np
import pytest

from .runner import params, run_both

OPTIMIZED = params("reduce", debug=False)
ALL = params("reduce")


@pytest.mark.parametrize("variant", ALL)
@pytest.mark.parametrize("block,n", [(256, 5000), (64, 777)])
def test_reduce_tree(variant, block, n):
    x = np.random.default_rng(n).random(n, dtype=np.float32)
    blocks = 4

    def host(gpu, mod):
        pi, po = gpu.put(x), gpu.alloc(blocks * 4)
        gpu.run(f"reduce_treeILj{block}E", (blocks,), (block,), pi, po, n, shared=block * 4)
        return {"part": gpu.get(po, blocks, np.float32)}
    ref, got = run_both(variant, host)
    assert abs(float(got["part"].astype(np.float64).sum()) - x.astype(np.float64).sum()) \
        <= n * 2.0 ** -23 * x.sum()


@pytest.mark.parametrize("variant", ALL)
def test_reduce_shuffle_and_int_atomics(variant):
    n = 3000
    v = np.random.default_rng(1).integers(-5000, 5000, n).astype(np.int32)

    def host(gpu, mod):
        pi, pt = gpu.put(v), gpu.put(np.zeros(1, np.int32))
        ps = gpu.put(np.zeros(1, np.uint64))
        gpu.run("reduce_shfl_int", (3,), (160,), pi, pt, ps, n)
        return {"total": gpu.get(pt, 1, np.int32), "sq": gpu.get(ps, 1, np.uint64)}
    ref, got = run_both(variant, host)
    assert int(got["total"][0]) == int(v.astype(np.int64).sum())
    assert int(got["sq"][0]) == int((v.astype(np.int64) ** 2).sum())


@pytest.mark.parametrize("variant", OPTIMIZED)
def test_float_and_double_atomics(variant):
    n = 1000
    x = np.random.default_rng(2).random(n, dtype=np.float32) * 10

    def host(gpu, mod):
        pi, pf = gpu.put(x), gpu.put(np.zeros(8, np.float32))
        pd = gpu.put(np.zeros(4, np.float64))
        pmx, pmn = gpu.put(np.zeros(1, np.int32)), gpu.put(np.full(1, 0xFFFFFFFF, np.uint32))
        gpu.run("atomic_float_bins", (8,), (128,), pi, pf, pd, pmx, pmn, n)
        return {"f": gpu.get(pf, 8, np.float32), "d": gpu.get(pd, 4, np.float64),
                "mx": gpu.get(pmx, 1, np.int32), "mn": gpu.get(pmn, 1, np.uint32)}
    ref, got = run_both(variant, host, unordered=("f", "d"))
    for res in (ref, got):
        fb = np.array([x[k::8].astype(np.float64).sum() for k in range(8)])
        db = np.array([x[k::4].astype(np.float64).sum() for k in range(4)])
        assert np.all(np.abs(res["f"] - fb) <= n / 8 * 2.0 ** -23 * fb)
        assert np.all(np.abs(res["d"] - db) <= 1e-12 * db)
        assert res["mx"][0] == x.max().view(np.int32)
        assert res["mn"][0] == int((x * np.float32(1000)).min())


def _blelloch(gpu, data: np.ndarray, block: int) -> int:
    """Exclusive scan of ``data`` on the device (recursive over block sums); its address."""
    n = data.size
    per = 2 * block
    nb = (n + per - 1) // per
    pi, po, ps = gpu.put(data), gpu.alloc(n * 4), gpu.alloc(nb * 4)
    shared = (per + per // 32 + 1) * 4
    gpu.run("scan_blelloch", (nb,), (block,), pi, po, ps, n, shared=shared)
    if nb > 1:
        sums = gpu.get(ps, nb, np.uint32)
        pss = _blelloch(gpu, sums, block)
        gpu.run("scan_add", (nb,), (block,), po, pss, n)
    return po


@pytest.mark.parametrize("variant", ALL)
@pytest.mark.parametrize("n,block", [(1000, 64), (300, 128), (64, 32)])
def test_blelloch_scan(variant, n, block):
    d = np.random.default_rng(n).integers(0, 1 << 20, n).astype(np.uint32)

    def host(gpu, mod):
        return {"scan": gpu.get(_blelloch(gpu, d, block), n, np.uint32)}
    ref, got = run_both(variant, host)
    want = np.concatenate([[0], np.cumsum(d.astype(np.uint64))[:-1]]).astype(np.uint32)
    assert np.array_equal(got["scan"], want)


@pytest.mark.parametrize("variant", ALL)
def test_warp_scan(variant):
    n, block = 1000, 256
    x = np.random.default_rng(9).integers(0, 100, n).astype(np.float32)

    def host(gpu, mod):
        pi, po = gpu.put(x), gpu.alloc(n * 4)
        gpu.run("scan_warp", ((n + block - 1) // block,), (block,), pi, po, n)
        return {"scan": gpu.get(po, n, np.float32)}
    ref, got = run_both(variant, host)
    # small integers: every partial sum is exact in f32
    want = np.concatenate([np.cumsum(x[k:k + block]) for k in range(0, n, block)])
    assert np.array_equal(got["scan"], want)
