"""tests/programs/cuda/sync.cu on both engines: the threadfence reduction (atomicInc on
a ``__device__`` ticket, the last block sums the others' volatile partials; a struct
passed by value), a float maximum by an atomicCAS loop, atomicInc/atomicDec wrapping,
atomicExch, a 64-bit CAS loop, 64-bit integer division and shuffles of doubles, against
Python models (exact; the block sums in a fixed order are compared bit for bit)."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from .runner import params, run_both

ALL = params("sync")


@pytest.mark.parametrize("variant", ALL)
def test_threadfence_reduction(variant):
    n, blocks = 1000, 8
    x = np.random.default_rng(1).integers(0, 64, n).astype(np.float32)
    params = struct.pack("<ifdhbx4x", n, 0.5, 2.25, -3, 7)
    assert len(params) == 24

    def host(gpu, mod):
        pi, pp, pt = gpu.put(x), gpu.alloc(blocks * 4), gpu.alloc(4)
        totals = []
        for _ in range(2):           # the last block resets the ticket for the next launch
            gpu.run("fence_reduce", (blocks,), (128,), pi, pp, pt, (params, "24s"))
            totals.append(gpu.get(pt, 1, np.float32)[0])
        ticket = gpu.get(gpu.symbol("retired"), 1, np.uint32)
        return {"totals": np.array(totals, np.float32), "ticket": ticket}
    ref, got = run_both(variant, host)
    # small integers halved: every partial sum is exact
    want = np.float32(x.astype(np.float64).sum() * 0.5 + 2.25 - 3 + 7)
    assert got["totals"].tolist() == [want, want] and got["ticket"][0] == 0


@pytest.mark.parametrize("variant", ALL)
def test_atomic_cas_exch_inc_dec(variant):
    n = 700
    x = np.random.default_rng(2).standard_normal(n).astype(np.float32)

    def host(gpu, mod):
        pf = gpu.put(np.full(1, -np.inf, np.float32))
        pr, pd = gpu.put(np.zeros(1, np.uint32)), gpu.put(np.full(1, 5, np.uint32))
        ps, pc = gpu.put(np.full(5, -1, np.int32)), gpu.put(np.full(1, 10, np.uint64))
        gpu.run("atomics_mix", ((n + 127) // 128,), (128,), gpu.put(x), pf, pr, pd, ps, pc, n)
        return {"max": gpu.get(pf, 1, np.float32), "ring": gpu.get(pr, 1, np.uint32),
                "dec": gpu.get(pd, 1, np.uint32), "slots": gpu.get(ps, 5, np.int32),
                "cas": gpu.get(pc, 1, np.uint64)}
    ref, got = run_both(variant, host)
    dec = 5
    for _ in range(n):                 # atomicDec: 0 or above the limit wraps to the limit
        dec = 1000 if dec == 0 or dec > 1000 else dec - 1
    assert got["max"][0] == x.max() and got["ring"][0] == n % 10 and got["dec"][0] == dec
    assert got["slots"].tolist() == list(range(5))
    assert int(got["cas"][0]) == 10 + n * (n - 1) // 2


def _trunc_div(a: int, b: int) -> tuple[int, int]:
    q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    return q, a - q * b


@pytest.mark.parametrize("variant", ALL)
def test_int64_division(variant):
    n = 300
    rng = np.random.default_rng(3)
    a = rng.integers(-2 ** 63, 2 ** 63, n, dtype=np.int64)
    b = rng.integers(-2 ** 40, 2 ** 40, n, dtype=np.int64)
    b[::5] = rng.integers(-9, 9, b[::5].size)
    b[b == 0] = 3
    a[:2], b[:2] = [-2 ** 63, 2 ** 63 - 1], [-1, 1]
    ua = rng.integers(0, 2 ** 64, n, dtype=np.uint64)

    def host(gpu, mod):
        pa, pb, pu, po = gpu.put(a), gpu.put(b), gpu.put(ua), gpu.alloc(n * 32)
        gpu.run("int64_div", ((n + 127) // 128,), (128,), pa, pb, pu, po, n)
        return {"out": gpu.get(po, 4 * n, np.int64).reshape(n, 4)}
    ref, got = run_both(variant, host)
    m64 = 2 ** 64
    for i in range(n):
        x, y, u = int(a[i]), int(b[i]), int(ua[i])
        q, r = _trunc_div(x, y)
        want = [q, r, u // (y & (m64 - 1) | 1), u % 1000000007 + _trunc_div(x, 3)[0]]
        want = [((w + 2 ** 63) % m64) - 2 ** 63 for w in want]
        assert got["out"][i].tolist() == want, i


@pytest.mark.parametrize("variant", ALL)
def test_shuffle_doubles(variant):
    n = 96
    x = np.random.default_rng(4).integers(-1000, 1000, n).astype(np.float64) / 8

    def host(gpu, mod):
        pi, po = gpu.put(x), gpu.alloc(n * 16)
        gpu.run("shuffle_double", (1,), (n,), pi, po, n)
        return {"out": gpu.get(po, 2 * n, np.float64).reshape(n, 2)}
    ref, got = run_both(variant, host)
    for i in range(n):
        w = x[i & ~31:(i & ~31) + 32]
        assert got["out"][i, 0] == w.sum()           # exact: eighths of small integers
        assert got["out"][i, 1] == x[i - 3 if i % 32 >= 3 else i]
