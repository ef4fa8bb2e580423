"""tests/programs/cuda/intrinsics.cu on both engines: ballot/any/all (also over a
divergent subset of lanes), butterfly and indexed shuffles (with a width), warp-aggregated
atomics, the bit intrinsics (popc, clz, ffs, brev, funnel shifts, byte_perm, mulhi, sad,
mul24, hadd), match, activemask, and ``__reduce_*_sync`` (redux.sync on sm_80, a
shuffle loop on sm_75), against Python models (all exact)."""

from __future__ import annotations

import numpy as np
import pytest

from .runner import params, run_both

ALL = params("intrinsics")
M32 = 0xFFFFFFFF


def _warps(a: np.ndarray) -> np.ndarray:
    return a.reshape(-1, 32)


@pytest.mark.parametrize("variant", ALL)
def test_warp_vote_and_shuffle(variant):
    n = 256
    v = np.random.default_rng(1).integers(-1100, 1100, n).astype(np.int32)

    def host(gpu, mod):
        pi, po = gpu.put(v), gpu.alloc(n * 20)
        gpu.run("warp_vote", (2,), (128,), pi, po, n)
        return {"out": gpu.get(po, 5 * n, np.uint32).reshape(n, 5)}
    ref, got = run_both(variant, host)
    out = got["out"]
    for w, vals in enumerate(_warps(v)):
        ballot = sum(1 << k for k in range(32) if vals[k] > 0)
        odd = sum(1 << k for k in range(1, 32, 2) if vals[k] & 1)
        for k in range(32):
            i = 32 * w + k
            flags = int((vals > 1000).any()) | int((vals >= -1000).all()) << 1 | \
                bin(ballot).count("1") << 2
            assert out[i, 0] == ballot and out[i, 1] == flags
            assert out[i, 2] == (odd if k & 1 else 0)
            assert out[i, 3] == np.uint32(vals.max())
            assert out[i, 4] == np.uint32(vals[(k * 7) & 31] + vals[k & ~7])


@pytest.mark.parametrize("variant", ALL)
def test_warp_aggregated_compaction(variant):
    n = 1000
    v = np.random.default_rng(2).integers(-50, 50, n).astype(np.int32)

    def host(gpu, mod):
        pi, po, pc = gpu.put(v), gpu.put(np.zeros(n, np.int32)), gpu.put(np.zeros(1, np.int32))
        gpu.run("compact_positive", ((n + 127) // 128,), (128,), pi, po, pc, n)
        cnt = int(gpu.get(pc, 1, np.int32)[0])
        return {"out": gpu.get(po, n, np.int32), "count": np.array([cnt])}
    # the warps' atomics take their slots in an order that differs between runs
    ref, got = run_both(variant, host, unordered=("out",))
    cnt = int(got["count"][0])
    assert cnt == int((v > 0).sum())
    assert sorted(got["out"][:cnt].tolist()) == sorted(v[v > 0].tolist())


def _funnel_l(x, y, s):
    return (((y << 32 | x) << s) >> 32) & M32


def _funnel_r(x, y, s):
    return ((y << 32 | x) >> s) & M32


def _perm(x, y, s):
    bs = list(x.to_bytes(4, "little")) + list(y.to_bytes(4, "little"))
    return sum(bs[(s >> (4 * k)) & 7] << (8 * k) for k in range(4))


def _s32(x):
    return x - (1 << 32) if x & 0x80000000 else x


def _bits_ref(x: int, y: int, z: int) -> list[int]:
    def ffs(v):
        return (v & -v).bit_length()

    def sad(a, b, c):
        return abs(a - b) + c
    xs, ys = _s32(x), _s32(y)
    s24 = _s32(((y & 0xFFFFFF) << 8) & M32) >> 8, _s32(((x & 0xFFFFFF) << 8) & M32) >> 8
    return [e & M32 for e in [
        bin(x).count("1") + ((32 - x.bit_length()) << 8) + (ffs(x) << 16),
        int(f"{x:032b}"[::-1], 2),
        _funnel_l(x, y, y & 31) ^ _funnel_r(x, y, x & 31),
        _funnel_l(x, y, min(y, 32)) + _funnel_r(y, x, min(x, 32)),
        _perm(x, y, 0x3715),
        ((x * y) >> 32) ^ ((xs * ys) >> 32),
        sad(xs, ys, 7) + sad(x >> 3, y >> 5, 1),
        bin(z).count("1") + ((64 - z.bit_length()) << 8) + (ffs(z) << 16),
        int(f"{z:064b}"[::-1], 2) >> 17,
        (z * ((x * y) & (2 ** 64 - 1))) >> 64,
        (x & 0xFFFFFF) * (y & 0xFFFFFF) + s24[0] * s24[1],
        ((x + y) >> 1) ^ ((x + y + 1) >> 1) ^ ((xs + ys) >> 1)]]


@pytest.mark.parametrize("variant", ALL)
def test_bit_intrinsics(variant):
    n = 200
    rng = np.random.default_rng(3)
    a = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    c = rng.integers(0, 1 << 63, n, dtype=np.uint64) << np.uint64(1)
    a[:4], b[:4], c[:4] = [0, 1, M32, 0x80000000], [0, 33, 31, 64], [0, 1, 2 ** 64 - 1, 1 << 63]

    def host(gpu, mod):
        pa, pb, pc, po = gpu.put(a), gpu.put(b), gpu.put(c), gpu.alloc(n * 48)
        gpu.run("bit_ops", ((n + 63) // 64,), (64,), pa, pb, pc, po, n)
        return {"out": gpu.get(po, 12 * n, np.uint32).reshape(n, 12)}
    ref, got = run_both(variant, host)
    for i in range(n):
        want = _bits_ref(int(a[i]), int(b[i]), int(c[i]))
        assert got["out"][i].tolist() == want, (i, int(a[i]), int(b[i]), int(c[i]))


@pytest.mark.parametrize("variant", ALL)
def test_match_and_activemask(variant):
    n = 100       # the last warp is partial: lanes past n still run, with -1
    v = np.random.default_rng(4).integers(0, 6, n).astype(np.int32) * 16
    v[64:96] = 48                      # a warp where match.all holds

    def host(gpu, mod):
        pi, po = gpu.put(v), gpu.alloc(n * 12)
        gpu.run("warp_match", (1,), (128,), pi, po, n)
        return {"out": gpu.get(po, 3 * n, np.uint32).reshape(n, 3)}
    ref, got = run_both(variant, host)
    full = np.concatenate([v, np.full(128 - n, -1, np.int32)])
    for i in range(n):
        w = full[i & ~31:(i & ~31) + 32]
        any_mask = sum(1 << k for k in range(32) if w[k] == full[i])
        same = len({int(x) & 0xF0 for x in w}) == 1
        assert got["out"][i, 0] == any_mask
        assert got["out"][i, 1] == (M32 if same else 0)
        assert got["out"][i, 2] == M32


@pytest.mark.parametrize("variant", ALL)
def test_warp_reduce_family(variant):
    n = 192
    v = np.random.default_rng(5).integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    v[32:64] = np.arange(32, dtype=np.uint32) * 0x10000001

    def host(gpu, mod):
        pi, po = gpu.put(v), gpu.alloc(n * 16)
        gpu.run("warp_reduce_ops", (2,), (96,), pi, po, n)
        return {"out": gpu.get(po, 4 * n, np.uint32).reshape(n, 4)}
    ref, got = run_both(variant, host)
    for i in range(n):
        w = v[i & ~31:(i & ~31) + 32]
        o = np.bitwise_or.reduce(w) ^ np.bitwise_and.reduce(w) ^ np.bitwise_xor.reduce(w)
        assert got["out"][i].tolist() == [int(w.astype(np.uint64).sum()) & M32, int(w.min()),
                                          int(w.view(np.int32).max()) & M32, int(o)]


def _bytes(v: np.ndarray, signed: bool = False, width: int = 8) -> np.ndarray:
    """The lanes of packed words (last axis), as int64."""
    k = 32 // width
    lanes = (v[..., None].astype(np.int64) >> (width * np.arange(k))) & ((1 << width) - 1)
    return np.where(lanes >> (width - 1), lanes - (1 << width), lanes) if signed else lanes


def _pack(lanes: np.ndarray, width: int = 8) -> np.ndarray:
    k = lanes.shape[-1]
    return ((lanes & ((1 << width) - 1)) << (width * np.arange(k))).sum(-1).astype(np.uint32)


@pytest.mark.parametrize("variant", ALL)
def test_block_match_simd_video(variant):
    n = 150
    rng = np.random.default_rng(6)
    ref = rng.integers(0, 1 << 32, 4 * n, dtype=np.uint64).astype(np.uint32)
    cand = rng.integers(0, 1 << 32, 4 * (n + 8), dtype=np.uint64).astype(np.uint32)
    cand[4 * 5:4 * 6] = ref[:4]         # thread 0's best candidate is k = 5, SAD 0

    def host(gpu, mod):
        pr, pc, pb, py = gpu.put(ref), gpu.put(cand), gpu.alloc(8 * n), gpu.alloc(24 * n)
        gpu.run("block_match", ((n + 63) // 64,), (64,), pr, pc, pb, py, n)
        return {"best": gpu.get(pb, 2 * n, np.uint32).reshape(n, 2),
                "bytes": gpu.get(py, 6 * n, np.uint32).reshape(n, 6)}
    ref_out, got = run_both(variant, host)
    r = _bytes(ref.reshape(n, 4))
    sads = np.stack([np.abs(r - _bytes(cand.reshape(-1, 4)[k:k + n])).sum((1, 2))
                     for k in range(8)], 1)
    assert np.array_equal(got["best"][:, 0], sads.min(1))
    assert np.array_equal(got["best"][:, 1], sads.argmin(1))
    x, y = ref.reshape(n, 4)[:, 0], cand.reshape(-1, 4)[7:7 + n, 0]
    bx, by = _bytes(x), _bytes(y)
    hx, hy = _bytes(x, True, 16), _bytes(y, True, 16)
    want = [_pack(np.abs(bx - by)), _pack(np.maximum(bx, by)) ^ _pack(np.minimum(bx, by)),
            _pack(np.where(bx > by, 0xFF, 0)), _pack((bx + by + 1) >> 1),
            _pack(_bytes(x, width=16) + _bytes(y, width=16), 16) ^ _pack(bx - by),
            (_pack(np.abs(hx - hy), 16) + np.abs(hx - hy).sum(1)).astype(np.uint32)]
    assert np.array_equal(got["bytes"], np.stack(want, 1))
