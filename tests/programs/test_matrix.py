"""tests/programs/cuda/matrix.cu on both engines: tiled GEMM (float and double, two tile
sizes, sizes that are not tile multiples), transposes, batched GEMV over a 3D grid, and a
naive DGEMM, against numpy.

Float bounds: a GEMM element is a K-term sum, so it is held to K * 2^-23 (f32) or
K * 2^-52 (f64) times the sum of the terms' magnitudes, the usual a-priori bound of
a recursive dot product; transposes move bits and must be exact."""

from __future__ import annotations

import numpy as np
import pytest

from .runner import params, run_both

OPTIMIZED = params("matrix", debug=False)
ALL = params("matrix")


def _dot_bound(a, b, eps: float) -> np.ndarray:
    return a.shape[1] * eps * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)))


def _gemm(dtype, tile: int, m: int, n: int, k: int):
    rng = np.random.default_rng(tile + m)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    c = rng.standard_normal((m, n)).astype(dtype)
    name = f"gemm_tiledI{'f' if dtype == np.float32 else 'd'}Li{tile}E"

    def host(gpu, mod):
        pa, pb, pc = gpu.put(a), gpu.put(b), gpu.put(c)
        grid = ((n + tile - 1) // tile, (m + tile - 1) // tile)
        alpha, beta = (1.5, -0.5)
        fmt = "f" if dtype == np.float32 else "d"
        gpu.run(name, grid, (tile, tile), pa, pb, pc, m, n, k, (alpha, fmt), (beta, fmt))
        return {"c": gpu.get(pc, m * n, dtype).reshape(m, n)}
    want = 1.5 * (a.astype(np.float64) @ b) - 0.5 * c
    eps = 2.0 ** -23 if dtype == np.float32 else 2.0 ** -52
    bound = 1.5 * _dot_bound(a, b, eps) + 4 * eps * np.abs(want)
    return host, want, bound


@pytest.mark.parametrize("variant", ALL)
@pytest.mark.parametrize("dtype,tile", [(np.float32, 16), (np.float32, 8), (np.float64, 16)])
def test_tiled_gemm(variant, dtype, tile):
    host, want, bound = _gemm(dtype, tile, 37, 29, 45)
    ref, got = run_both(variant, host)
    assert np.all(np.abs(got["c"] - want) <= bound)


@pytest.mark.parametrize("variant", OPTIMIZED)
@pytest.mark.parametrize("kernel", ["transpose_naive", "transpose_padded"])
def test_transpose(variant, kernel):
    w, h = 70, 45
    a = np.random.default_rng(5).standard_normal((h, w)).astype(np.float32)

    def host(gpu, mod):
        pi, po = gpu.put(a), gpu.alloc(a.nbytes)
        gpu.run(kernel, ((w + 31) // 32, (h + 31) // 32), (32, 8), po, pi, w, h)
        return {"t": gpu.get(po, w * h, np.float32).reshape(w, h)}
    ref, got = run_both(variant, host)
    assert np.array_equal(got["t"], a.T)


@pytest.mark.parametrize("variant", ALL)
def test_gemv_batched_3d_grid(variant):
    batch, rows, cols = 3, 10, 70
    rng = np.random.default_rng(6)
    a = rng.standard_normal((batch, rows, cols)).astype(np.float32)
    x = rng.standard_normal((batch, cols)).astype(np.float32)

    def host(gpu, mod):
        pa, px, py = gpu.put(a), gpu.put(x), gpu.alloc(batch * rows * 4)
        gpu.run("gemv_batched", ((rows * 32 + 127) // 128, 1, batch), (128,), pa, px, py,
                rows, cols)
        return {"y": gpu.get(py, batch * rows, np.float32).reshape(batch, rows)}
    ref, got = run_both(variant, host)
    want = np.einsum("brc,bc->br", a.astype(np.float64), x)
    bound = cols * 2.0 ** -23 * np.einsum("brc,bc->br", np.abs(a), np.abs(x))
    assert np.all(np.abs(got["y"] - want) <= bound)


@pytest.mark.parametrize("variant", OPTIMIZED)
def test_dgemm_naive(variant):
    n = 24
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))

    def host(gpu, mod):
        pa, pb, pc = gpu.put(a), gpu.put(b), gpu.alloc(n * n * 8)
        gpu.run("dgemm_naive", ((n + 7) // 8, (n + 7) // 8), (8, 8), pa, pb, pc, n)
        return {"c": gpu.get(pc, n * n, np.float64).reshape(n, n)}
    ref, got = run_both(variant, host)
    # the loop's fma chain, in order: exactly what sequential fma gives
    want = np.zeros((n, n))
    for k in range(n):
        want = _fma(a[:, k:k + 1], b[k:k + 1, :], want)
    assert np.array_equal(got["c"], want)


def _fma(a, b, c) -> np.ndarray:
    """Single-rounded a*b+c in float64 (exact via Python's fractions for each element)."""
    from fractions import Fraction
    a, b, c = np.broadcast_arrays(a, b, c)
    out = np.empty(a.shape)
    for i in np.ndindex(a.shape):
        out[i] = float(Fraction(float(a[i])) * Fraction(float(b[i])) + Fraction(float(c[i])))
    return out
