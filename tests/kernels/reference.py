"""numpy / plain-Python references for the micro-benchmark, reduction, histogram and divergence
kernels (kernels/{madd,fmadd,mmul,fmmul,loop,reduce,histogram,diverge}.cu).

Each function states the kernel contract it models. Integer results are exact (arithmetic
modulo 2^32 where the kernel wraps); float results are computed in float64 and compared by the
tests with a tolerance, since the GPU contracts multiply-adds into FMAs and sums in tree order.
Rodinia references are in reference_rodinia.py, AES in reference_aes.py.
"""

from __future__ import annotations

import numpy as np

M32 = 0xFFFFFFFF


def madd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``add``: elementwise a + b of uint32 (wrapping) or float matrices."""
    return a + b


def mmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``multiply`` / ``multiply_tiled``: a @ b; uint32 modulo 2^32, floats in float64."""
    if a.dtype == np.uint32:
        # uint64 products and sums wrap modulo 2^64, which 2^32 divides
        return ((a.astype(np.uint64) @ b.astype(np.uint64)) & M32).astype(np.uint32)
    return a.astype(np.float64) @ b.astype(np.float64)


def loop(size: int, n: int) -> np.ndarray:
    """``loop``: data[i] = sum over k < n of (i*k + (k ^ i)) modulo 2^32."""
    i = np.arange(size, dtype=np.uint64)[:, None]
    k = np.arange(n, dtype=np.uint64)[None, :]
    return ((i * k + (k ^ i)).sum(axis=1) & M32).astype(np.uint32)


def reduce_sum_f32(x: np.ndarray, block: int) -> np.ndarray:
    """``reduce_sum_f32``: per-block sums of 2*block consecutive elements (float64)."""
    nblocks = -(-len(x) // (2 * block))
    padded = np.zeros(nblocks * 2 * block)
    padded[: len(x)] = x
    return padded.reshape(nblocks, 2 * block).sum(axis=1)


def reduce_stats_u32(x: np.ndarray, block: int, grid: int) -> np.ndarray:
    """``reduce_stats_u32``: per block b, (sum mod 2^32, min, max) of the elements at
    i = b*block + t + k*block*grid (grid-stride); empty blocks give (0, 2^32-1, 0)."""
    out = np.zeros((grid, 3), dtype=np.uint32)
    idx = np.arange(len(x))
    owner = (idx // block) % grid
    for b in range(grid):
        v = x[owner == b].astype(np.uint64)
        out[b] = (int(v.sum()) & M32, v.min(initial=M32), v.max(initial=0))
    return out


def reduce_sum_shfl_s32(x: np.ndarray, block: int) -> np.ndarray:
    """``reduce_sum_shfl_s32``: per-block int32 sums (wrapping) of block consecutive ints."""
    nblocks = -(-len(x) // block)
    padded = np.zeros(nblocks * block, dtype=np.int64)
    padded[: len(x)] = x
    sums = padded.reshape(nblocks, block).sum(axis=1)
    return ((sums + 2**31) % 2**32 - 2**31).astype(np.int32)


def histogram(x: np.ndarray, nbins: int) -> np.ndarray:
    """``histogram_shared`` / ``histogram_bytes_global``: counts of x % nbins."""
    return np.bincount(x.astype(np.int64) % nbins, minlength=nbins).astype(np.uint32)


def scatter_atomics(key: np.ndarray, w: np.ndarray, v: np.ndarray, nkeys: int):
    """``scatter_atomics``: per key, (sum of w, min of v, max of v); untouched keys keep the
    initial (0, INT_MAX, INT_MIN)."""
    sums = np.zeros(nkeys)
    np.add.at(sums, key, w.astype(np.float64))
    mins = np.full(nkeys, np.iinfo(np.int32).max, dtype=np.int32)
    maxs = np.full(nkeys, np.iinfo(np.int32).min, dtype=np.int32)
    np.minimum.at(mins, key, v)
    np.maximum.at(maxs, key, v)
    return sums, mins, maxs


def collatz(x: np.ndarray, limit: int) -> np.ndarray:
    """``collatz``: steps from x to 1 (capped at limit, 64-bit intermediate values);
    0xffffffff for x == 0."""
    out = []
    for v in x.tolist():
        if v == 0:
            out.append(M32)
            continue
        steps = 0
        while v != 1 and steps < limit:
            v = 3 * v + 1 if v & 1 else v >> 1
            v &= (1 << 64) - 1
            steps += 1
        out.append(steps)
    return np.array(out, dtype=np.uint32)


def _c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _wrap32(v: int) -> int:
    return (v + 2**31) % 2**32 - 2**31


def branchy(x: np.ndarray, mul: int, add: int, shift: int) -> np.ndarray:
    """``branchy`` with affine f = (mul, add, shift): see the kernel's case table."""

    def f(v: int) -> int:
        return _wrap32(v * mul + add) >> shift

    out = []
    for i, v in enumerate(x.tolist()):
        if v < -1000:
            y = _c_div(v, 7)
        elif v < 0:
            y = (-v) % 13  # -v > 0 here, so C's remainder equals Python's
        elif v == 0:
            y = f(i)
        elif v & 1:
            y = bin(v).count("1") * 100 + (32 - v.bit_length())
        else:
            y = f(v)
        out.append(_wrap32(y))
    return np.array(out, dtype=np.int32)


def reverse_digits(x: np.ndarray, base: int) -> np.ndarray:
    """``reverse_digits``: digits of x in ``base``, least significant first, as hex nibbles
    (the first digit highest), modulo 2^32."""
    out = []
    for v in x.tolist():
        digits = []
        while True:
            digits.append(v % base)
            v //= base
            if v == 0:
                break
        packed = 0
        for d in digits:
            packed = ((packed << 4) | d) & M32
        out.append(packed)
    return np.array(out, dtype=np.uint32)
