"""tests/programs/cuda/physics.cu on both engines: n-body (float4 tiles, rsqrtf),
Black-Scholes (polynomial CND with __expf/logf/sqrtf/expf; normcdff/erfcf/log1pf with a
double result), Mandelbrot and a double-precision Julia set, against float64 numpy.

The engines must agree bit for bit (the .approx instructions of -use_fast_math included:
both evaluate them the same way, docs/ptx-engine.md).  Against float64 references the
bounds are relative: n-body 1e-4 (rsqrt.approx is within 2^-22.9; the sum of 300 terms
reorders nothing but rounds each); Black-Scholes 2e-4 of the spot price (the classic
sample's own check; the polynomial CND itself is accurate to ~1e-7); the escape-time
fractals compare iteration counts, where a pixel on the set's edge may legitimately escape
one iteration apart from float64 (at most 1% of the pixels differ)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from .runner import params, run_both

ALL = params("physics")


def _nbody_ref(pos, vel, dt, damp, soft2):
    p = pos.astype(np.float64)
    r = p[None, :, :3] - p[:, None, :3]
    d2 = (r ** 2).sum(-1) + soft2
    acc = (r * (p[None, :, 3] / d2 ** 1.5)[..., None]).sum(1)
    v = (vel[:, :3] + acc * dt) * damp
    return p[:, :3] + v * dt, v


@pytest.mark.parametrize("variant", ALL)
def test_nbody(variant):
    n, block = 300, 64
    rng = np.random.default_rng(1)
    pos = np.concatenate([rng.standard_normal((n, 3)), rng.random((n, 1)) + 0.5], 1)
    pos = pos.astype(np.float32)
    vel = (rng.standard_normal((n, 4)) * 0.1).astype(np.float32)

    def host(gpu, mod):
        pp, pn, pv = gpu.put(pos), gpu.alloc(pos.nbytes), gpu.put(vel)
        gpu.run("nbody_step", ((n + block - 1) // block,), (block,), pp, pn, pv, n, 0.01,
                0.995, 0.01, shared=block * 16)
        return {"pos": gpu.get(pn, 4 * n, np.float32).reshape(n, 4),
                "vel": gpu.get(pv, 4 * n, np.float32).reshape(n, 4)}
    ref, got = run_both(variant, host)
    wp, wv = _nbody_ref(pos, vel, 0.01, 0.995, 0.01)
    assert np.allclose(got["pos"][:, :3], wp, rtol=1e-4, atol=1e-5)
    assert np.allclose(got["vel"][:, :3], wv, rtol=1e-3, atol=1e-4)
    assert np.array_equal(got["pos"][:, 3], pos[:, 3])


def _cnd(d):
    return 0.5 * (1 + np.vectorize(math.erf)(d / math.sqrt(2)))


def _options(n: int):
    rng = np.random.default_rng(2)
    s = rng.uniform(5, 30, n).astype(np.float32)
    x = rng.uniform(1, 100, n).astype(np.float32)
    t = rng.uniform(0.25, 10, n).astype(np.float32)
    return s, x, t


def _bs_ref(s, x, t, r, v):
    s, x, t = (a.astype(np.float64) for a in (s, x, t))
    d1 = (np.log(s / x) + (r + 0.5 * v * v) * t) / (v * np.sqrt(t))
    d2 = d1 - v * np.sqrt(t)
    e = np.exp(-r * t)
    return s * _cnd(d1) - x * e * _cnd(d2), x * e * _cnd(-d2) - s * _cnd(-d1)


@pytest.mark.parametrize("variant", ALL)
def test_black_scholes(variant):
    n, r, v = 2000, 0.02, 0.30
    s, x, t = _options(n)

    def host(gpu, mod):
        pc, pp = gpu.alloc(n * 4), gpu.alloc(n * 4)
        ps, px, pt = gpu.put(s), gpu.put(x), gpu.put(t)
        gpu.run("black_scholes", (4,), (128,), pc, pp, ps, px, pt, r, v, n)
        return {"call": gpu.get(pc, n, np.float32), "put": gpu.get(pp, n, np.float32)}
    ref, got = run_both(variant, host)
    wc, wp = _bs_ref(s, x, t, r, v)
    assert np.max(np.abs(got["call"] - wc) / s) < 2e-4
    assert np.max(np.abs(got["put"] - wp) / s) < 2e-4


@pytest.mark.parametrize("variant", ALL)
def test_black_scholes_erf(variant):
    n, r, v = 1000, 0.02, 0.30
    s, x, t = _options(n)

    def host(gpu, mod):
        pc, ps, px, pt = gpu.alloc(n * 8), gpu.put(s), gpu.put(x), gpu.put(t)
        gpu.run("black_scholes_erf", ((n + 127) // 128,), (128,), pc, ps, px, pt, r, v, n)
        return {"call": gpu.get(pc, n, np.float64)}
    ref, got = run_both(variant, host)
    wc, _ = _bs_ref(s, x, t, np.float32(r), np.float32(v))
    assert np.max(np.abs(got["call"] - wc) / s) < 2e-5


def _escape(cx, cy, max_iter, limit=4.0):
    k = np.zeros(cx.shape, np.int32)
    x, y = np.zeros_like(cx), np.zeros_like(cy)
    for _ in range(max_iter):
        live = x * x + y * y <= limit
        if not live.any():
            break
        x, y = np.where(live, x * x - y * y + cx, x), np.where(live, 2 * x * y + cy, y)
        k += live
    return k


@pytest.mark.parametrize("variant", ALL)
def test_mandelbrot(variant):
    w, h, max_iter = 96, 64, 200
    x0, y0, dx, dy = -2.0, -1.0, 3.0 / w, 2.0 / h

    def host(gpu, mod):
        po = gpu.alloc(w * h * 4)
        gpu.run("mandelbrot", ((w + 15) // 16, (h + 15) // 16), (16, 16), po, w, h, x0, y0,
                dx, dy, max_iter)
        return {"it": gpu.get(po, w * h, np.int32).reshape(h, w)}
    ref, got = run_both(variant, host)
    px, py = np.meshgrid(np.arange(w), np.arange(h))
    cx = (np.float32(x0) + px.astype(np.float32) * np.float32(dx)).astype(np.float64)
    cy = (np.float32(y0) + py.astype(np.float32) * np.float32(dy)).astype(np.float64)
    want = _escape(cx, cy, max_iter)
    assert np.mean(got["it"] != want) <= 0.01
    assert got["it"].max() == max_iter and got["it"].min() >= 1


@pytest.mark.parametrize("variant", ALL)
def test_julia_double(variant):
    w, h = 80, 60

    def host(gpu, mod):
        po = gpu.alloc(w * h)
        gpu.run("julia_double", ((w + 15) // 16, (h + 7) // 8), (16, 8), po, w, h, -0.8, 0.156,
                1.5)
        return {"img": gpu.get(po, w * h, np.uint8).reshape(h, w)}
    ref, got = run_both(variant, host)
    px, py = np.meshgrid(np.arange(w), np.arange(h))
    zr = 1.5 * (w // 2 - px) / (w // 2)
    zi = 1.5 * (h // 2 - py) / (h // 2)
    k = np.zeros((h, w), np.int32)
    live = np.ones((h, w), bool)
    for _ in range(200):
        zr, zi = np.where(live, zr * zr - zi * zi - 0.8, zr), np.where(live, 2 * zr * zi + 0.156,
                                                                        zi)
        live &= zr * zr + zi * zi <= 1000.0
        k += live
    assert np.mean(got["img"] != k) <= 0.01
