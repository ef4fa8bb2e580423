"""Mipmapped textures, explicit level of detail, gradients and gather (``tex.level``,
``tex.grad``, ``tld4``; data/mipmap.cu) against a per-sample reference of the rules in
``gdevd/gpu/texmip.py``: the level of detail biased and clamped, nearest and linear mip
filters over levels that halve, gradients to a level of detail, the 2x2 gather footprint in
its order through the address modes; every form on both engines, bit for bit; hostile
descriptors refused naming the field.  conftest runs each test on both engines."""

from __future__ import annotations

import errno
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gdevd.errors import GdevError
from gdevd.gpu.ptx import jit
from gdevd.gpu.texture import TextureTable
from gdevd.runtime.texdesc import validate
from libgdev import texture as T

from .helpers import Device, load
from .test_tex3d import BORDER, FMT, MODES, SHAPE, Ref, cube_ref

F = np.float32


@pytest.fixture(scope="module")
def mod():
    return load("mipmap")


# -- the reference ------------------------------------------------------------------------------

def pyramid(rng, w: int, h: int, d: int, shape: str, c: int = 4, dtype=np.float32,
            levels: int | None = None) -> list[np.ndarray]:
    """Random levels (slices, rows, width, channels): sizes halve (depth only in 3D)."""
    out, lv = [], 0
    while levels is None and (max(w, h, d if shape == "3d" else 1) >> lv) or \
            levels is not None and lv < levels:
        dims = (d if shape != "3d" else max(1, d >> lv), max(1, h >> lv), max(1, w >> lv), c)
        if dtype == np.float32:
            out.append(rng.uniform(-50, 50, dims).astype(F))
        else:
            out.append(rng.integers(0, 200, dims).astype(dtype))
        lv += 1
    return out


class Mip:
    """A mipmapped texture as its levels' references and its level-of-detail state."""

    def __init__(self, levels, shape="plain", modes=("clamp",) * 3, normalized=True,
                 linear=False, mip_linear=False, bias=0.0, lo=0.0, hi=None) -> None:
        self.levels, self.shape, self.mip_linear = levels, shape, mip_linear
        self.bias, self.lo = F(bias), F(lo)
        self.hi = F(len(levels) - 1 if hi is None else hi)
        self.refs = [Ref(lv, modes, normalized, linear) for lv in levels]
        self.modes, self.normalized, self.linear = modes, normalized, linear

    def lod(self, v: float) -> F:
        v = F(0) if math.isnan(v) else F(v)
        v = F(v + self.bias)
        v = min(max(v, self.lo), self.hi)
        return min(max(v, F(0)), F(len(self.levels) - 1))

    def at_level(self, lv: int, xs: list[float], s0: int = 0) -> list[float]:
        ref = self.refs[lv]
        if not self.normalized and lv:
            xs = [F(x) * F(2.0 ** -lv) for x in xs]
        return ref.sample(ref.scaled(xs), s0)

    def sample(self, xs: list[float], lod: float, s0: int = 0) -> list[float]:
        v = self.lod(lod)
        if not self.mip_linear:
            return self.at_level(int(math.floor(F(v + F(0.5)))), xs, s0)
        lo = math.floor(v)
        f = F(round(float(v - F(lo)) * 256) / 256)
        a = np.array(self.at_level(lo, xs, s0), F)
        b = np.array(self.at_level(min(lo + 1, len(self.levels) - 1), xs, s0), F)
        return list((F(1) - f) * a + f * b)

    def grad_lod(self, dx: list[float], dy: list[float]) -> float:
        d, h, w, _ = self.levels[0].shape
        sizes = (w, w, w) if self.shape == "cube" else (w, h, d)
        lens = []
        for g in (dx, dy):
            acc = F(0)
            for k, c in enumerate(g):
                p = F(c) * (F(sizes[k]) if self.normalized or self.shape == "cube" else F(1))
                acc = F(acc + p * p) if k else F(p * p)
            lens.append(acc)
        rho2 = float(max(lens))
        lg = -math.inf if rho2 == 0 else math.log2(rho2)
        return float(F(np.rint(lg * 128.0) / 256.0))


def packed(levels: list[np.ndarray]) -> np.ndarray:
    """Levels one after the other, rows and slices packed (gdevd.gpu.texture.mip_layout)."""
    return np.concatenate([lv.reshape(-1).view(np.uint8) for lv in levels])


def make(dev, table, mip: Mip, read_norm=False, pad: int = 0) -> int:
    """The texture object of ``mip`` on the device; one level may have rows ``pad`` bytes
    apart beyond one row of texels."""
    lv0 = mip.levels[0]
    d, h, w, c = lv0.shape
    row = w * c * lv0.dtype.itemsize
    pitch = row + pad
    if pad:
        img = np.zeros((d, h, pitch), np.uint8)
        img[:, :, :row] = lv0.reshape(d, h, row // lv0.dtype.itemsize).view(np.uint8)
        va = dev.put(img)
    else:
        va = dev.put(packed(mip.levels))
    desc = T.tex_desc(T.TEX_RESOURCE_PITCH2D, va, FMT[lv0.dtype.str[1:]], c, w, h, pitch,
                      modes=tuple(MODES[m] for m in mip.modes), linear=mip.linear,
                      normalized_coords=mip.normalized, read_normalized=read_norm,
                      border=BORDER, shape=SHAPE.get(mip.shape, T.TEX_SHAPE_PLAIN),
                      depth=d if mip.shape != "plain" else 0,
                      slice_pitch=pitch * h if mip.shape != "plain" else 0,
                      levels=len(mip.levels), mip_linear=mip.mip_linear,
                      lod_bias=float(mip.bias), min_lod=float(mip.lo), max_lod=float(mip.hi))
    return table.create(validate(desc))


def run(mod, kernel, mip, args, out_dtype=np.float32, extra=(), read_norm=False, pad=0):
    dev, table = Device(), TextureTable()
    h = make(dev, table, mip, read_norm, pad)
    n = np.asarray(args[0]).shape[0]
    ins = [dev.put(np.ascontiguousarray(a)) for a in args]
    out = dev.alloc(16 * n)
    launch = dev.launch(mod, kernel, (n + 63) // 64, 64, h, *ins, *extra, out, n,
                        textures=table)
    return dev.get(out, 4 * n, out_dtype).reshape(n, 4), launch


def coords(rng, n: int) -> np.ndarray:
    return rng.uniform(-0.25, 1.25, n).astype(F)


# -- explicit level of detail -------------------------------------------------------------------

@pytest.mark.parametrize("linear,mip_linear", [(False, False), (True, False), (False, True),
                                               (True, True)])
@pytest.mark.parametrize("modes", [("clamp",) * 3, ("wrap", "border", "clamp")])
def test_lod2d_every_level_and_between(mod, engine, linear, mip_linear, modes):
    rng = np.random.default_rng(hash((linear, mip_linear, modes)) & 0xFFFF)
    mip = Mip(pyramid(rng, 16, 8, 1, "plain"), modes=modes, linear=linear,
              mip_linear=mip_linear)
    n = 200
    xs, ys = coords(rng, n), coords(rng, n)
    lods = rng.uniform(-1, 6, n).astype(F)
    lods[:12] = [0, 1, 2, 3, 4, 0.5, 1.5, 2.25, np.nan, np.inf, -np.inf, 1 / 512]
    got, launch = run(mod, "lod2d_f4", mip, [xs, ys, lods])
    assert launch.engine == engine
    want = [mip.sample([xs[k], ys[k]], lods[k]) for k in range(n)]
    np.testing.assert_allclose(got, np.array(want, F), rtol=1e-5, atol=1e-5)


def test_lod_bias_and_clamps(mod):
    rng = np.random.default_rng(7)
    levels = pyramid(rng, 8, 8, 1, "plain", c=1)
    for bias, lo, hi in [(1.0, 0.0, 3.0), (-0.75, 0.5, 2.0), (0.0, 1.0, 1.0), (2.5, 0, 0)]:
        mip = Mip(levels, mip_linear=True, bias=bias, lo=lo, hi=hi)
        lods = np.linspace(-2, 5, 57).astype(F)
        xs = np.full(lods.size, 0.3, F)
        got, _ = run(mod, "lod2d_f4", mip, [xs, xs, lods])
        want = [mip.sample([F(0.3), F(0.3)], lods[k]) for k in range(lods.size)]
        np.testing.assert_allclose(got, np.array(want, F), rtol=1e-5, atol=1e-5)


def test_mip_blend_weights_are_eight_bit(mod):
    """Between a level of zeros and one of ones the blend moves in 1/256ths."""
    levels = [np.zeros((1, 2, 2, 1), F), np.ones((1, 1, 1, 1), F)]
    mip = Mip(levels, mip_linear=True)
    lods = np.arange(0, 1, 1 / 1024).astype(F)
    xs = np.full(lods.size, 0.5, F)
    got, _ = run(mod, "lod2d_f4", mip, [xs, xs, lods])
    assert np.unique(got[:, 0]).size == 257
    assert set(np.unique(got[:, 0] * 256)) <= set(range(257))


def test_plain_tex_on_a_mipmap_reads_level_zero_plus_bias(mod):
    rng = np.random.default_rng(8)
    levels = pyramid(rng, 8, 4, 1, "plain")
    xs, ys = coords(rng, 64), coords(rng, 64)
    for bias in (0.0, 1.0, 1.6):
        mip = Mip(levels, bias=bias)
        got, _ = run(mod, "tex2d_f4", mip, [xs, ys])
        want = [mip.sample([xs[k], ys[k]], 0.0) for k in range(64)]
        np.testing.assert_array_equal(got, np.array(want, F))


def test_unnormalised_coordinates_scale_by_level(mod):
    rng = np.random.default_rng(9)
    mip = Mip(pyramid(rng, 16, 16, 1, "plain"), normalized=False, linear=True)
    n = 120
    xs, ys = rng.uniform(-2, 18, n).astype(F), rng.uniform(-2, 18, n).astype(F)
    lods = rng.uniform(0, 4, n).astype(F)
    got, _ = run(mod, "lod2d_f4", mip, [xs, ys, lods])
    want = [mip.sample([xs[k], ys[k]], lods[k]) for k in range(n)]
    np.testing.assert_allclose(got, np.array(want, F), rtol=1e-5, atol=1e-5)


def test_integer_texels_nearest_level(mod):
    rng = np.random.default_rng(10)
    mip = Mip(pyramid(rng, 8, 8, 1, "plain", dtype=np.int32))
    n = 100
    xs, ys, lods = coords(rng, n), coords(rng, n), rng.uniform(-1, 4, n).astype(F)
    got, _ = run(mod, "lod2d_i4", mip, [xs, ys, lods], np.int32)
    want = [mip.sample([xs[k], ys[k]], lods[k]) for k in range(n)]
    np.testing.assert_array_equal(got, np.array(want).astype(np.int32))


def test_lod1d_lod3d_layered_cube(mod):
    rng = np.random.default_rng(11)
    n = 90
    xs, ys, zs = coords(rng, n), coords(rng, n), coords(rng, n)
    lods = rng.uniform(-0.5, 5, n).astype(F)
    mip = Mip(pyramid(rng, 16, 1, 1, "plain"), linear=True, mip_linear=True)
    got, _ = run(mod, "lod1d_f4", mip, [xs, lods])
    want = [mip.sample([xs[k]], lods[k]) for k in range(n)]
    np.testing.assert_allclose(got, np.array(want, F), rtol=1e-5, atol=1e-5)
    mip = Mip(pyramid(rng, 8, 4, 4, "3d"), "3d", linear=True, mip_linear=True)
    got, _ = run(mod, "lod3d_f4", mip, [xs, ys, zs, lods])
    want = [mip.sample([xs[k], ys[k], zs[k]], lods[k]) for k in range(n)]
    np.testing.assert_allclose(got, np.array(want, F), rtol=1e-5, atol=1e-5)
    mip = Mip(pyramid(rng, 8, 8, 3, "a2d"), "a2d", mip_linear=True)
    layers = rng.integers(-1, 4, n).astype(np.int32)
    got, _ = run(mod, "lod2dl_f4", mip, [xs, ys, lods, layers])
    want = [mip.sample([xs[k], ys[k]], lods[k], int(np.clip(layers[k], 0, 2)))
            for k in range(n)]
    np.testing.assert_allclose(got, np.array(want, F), rtol=1e-5, atol=1e-5)


def test_cube_lod_picks_face_of_the_level(mod):
    rng = np.random.default_rng(12)
    mip = Mip(pyramid(rng, 4, 4, 6, "cube"), "cube")
    n = 80
    ds = [rng.uniform(-1, 1, n).astype(F) for _ in range(3)]
    lods = rng.uniform(0, 3, n).astype(F)
    got, _ = run(mod, "lodcube_f4", mip, [*ds, lods])
    for k in range(n):
        lv = int(math.floor(mip.lod(lods[k]) + F(0.5)))
        face, s, t = cube_ref(ds[0][k], ds[1][k], ds[2][k])
        w = F(mip.levels[lv].shape[2])
        want = mip.refs[lv].sample([s * w, t * w], face, True)
        np.testing.assert_array_equal(got[k], np.array(want, F))


# -- gradients ----------------------------------------------------------------------------------

def test_grad2d_and_grad1d(mod):
    rng = np.random.default_rng(13)
    mip = Mip(pyramid(rng, 32, 16, 1, "plain"), linear=True, mip_linear=True)
    n = 150
    xs, ys = coords(rng, n), coords(rng, n)
    dx = (rng.uniform(-0.2, 0.2, (n, 2)) * rng.choice([0.01, 1], (n, 1))).astype(F)
    dy = (rng.uniform(-0.2, 0.2, (n, 2)) * rng.choice([0.01, 1], (n, 1))).astype(F)
    dx[:3] = [[0, 0], [1 / 32, 0], [0, 1 / 4]]
    dy[:3] = [[0, 0], [0, 0], [0, 1 / 8]]
    got, _ = run(mod, "grad2d_f4", mip, [xs, ys, dx, dy])
    want = [mip.sample([xs[k], ys[k]], mip.grad_lod(dx[k], dy[k])) for k in range(n)]
    np.testing.assert_allclose(got, np.array(want, F), rtol=1e-5, atol=1e-5)
    mip = Mip(pyramid(rng, 32, 1, 1, "plain"), mip_linear=True)
    got, _ = run(mod, "grad1d_f4", mip, [xs, dx[:, 0].copy(), dy[:, 1].copy()])
    want = [mip.sample([xs[k]], mip.grad_lod([dx[k, 0]], [dy[k, 1]])) for k in range(n)]
    np.testing.assert_allclose(got, np.array(want, F), rtol=1e-5, atol=1e-5)


def test_grad3d_and_layered(mod):
    rng = np.random.default_rng(14)
    n = 100
    xs, ys, zs = coords(rng, n), coords(rng, n), coords(rng, n)
    dx, dy = (rng.uniform(-0.3, 0.3, (n, 4)).astype(F) for _ in range(2))
    mip = Mip(pyramid(rng, 8, 8, 8, "3d"), "3d", mip_linear=True, linear=True)
    got, _ = run(mod, "grad3d_f4", mip, [xs, ys, zs, dx, dy])
    want = [mip.sample([xs[k], ys[k], zs[k]], mip.grad_lod(dx[k, :3], dy[k, :3]))
            for k in range(n)]
    np.testing.assert_allclose(got, np.array(want, F), rtol=1e-5, atol=1e-5)
    mip = Mip(pyramid(rng, 16, 8, 2, "a2d"), "a2d")
    layers = rng.integers(0, 2, n).astype(np.int32)
    d2x, d2y = dx[:, :2].copy(), dy[:, :2].copy()
    got, _ = run(mod, "grad2dl_f4", mip, [xs, ys, d2x, d2y, layers])
    want = [mip.sample([xs[k], ys[k]], mip.grad_lod(d2x[k], d2y[k]), int(layers[k]))
            for k in range(n)]
    np.testing.assert_array_equal(got, np.array(want, F))


# -- gather ------------------------------------------------------------------------------------

def gather_ref(ref: Ref, x: F, y: F, comp: int) -> list[float]:
    d, h, w, _ = ref.data.shape
    us = ref.scaled([x, y])
    i, j = (math.floor(float(F(u) - F(0.5))) for u in us)
    return [ref.point([i + dx, j + dy], 0, ref.normalized)[comp]
            for dx, dy in ((0, 1), (1, 1), (1, 0), (0, 0))]


@pytest.mark.parametrize("modes", [("clamp",) * 3, ("wrap", "mirror", "clamp"),
                                   ("border", "border", "clamp")])
@pytest.mark.parametrize("normalized", [False, True])
def test_gather_every_component(mod, engine, modes, normalized):
    rng = np.random.default_rng(hash((modes, normalized)) & 0xFFFF)
    data = rng.uniform(-9, 9, (1, 5, 7, 4)).astype(F)
    mip = Mip([data], modes=modes, normalized=normalized, linear=True)
    n = 120
    lo, hi = (-0.3, 1.3) if normalized else (-2, 9)
    xs, ys = rng.uniform(lo, hi, n).astype(F), rng.uniform(lo, hi, n).astype(F)
    for comp in range(4):
        got, launch = run(mod, "gather_f4", mip, [xs, ys], extra=(comp,))
        assert launch.engine == engine
        want = [gather_ref(mip.refs[0], xs[k], ys[k], comp) for k in range(n)]
        np.testing.assert_array_equal(got, np.array(want, F), err_msg=f"comp {comp}")


def test_gather_integers_padded_rows_and_missing_channels(mod):
    rng = np.random.default_rng(15)
    ints = rng.integers(-1000, 1000, (1, 7, 13, 2)).astype(np.int32)
    xs, ys = rng.uniform(-1, 5, 60).astype(F), rng.uniform(-1, 5, 60).astype(F)
    for normalized, modes, pad in [(False, ("clamp",) * 3, 0), (True, ("wrap",) * 3, 4000)]:
        mip = Mip([ints], modes=modes, normalized=normalized)
        got, _ = run(mod, "gather_i4", mip, [xs / 4, ys / 4] if normalized else [xs, ys],
                     np.int32, pad=pad)
        want = [gather_ref(mip.refs[0], xs[k] / 4 if normalized else xs[k],
                           ys[k] / 4 if normalized else ys[k], 1) for k in range(60)]
        np.testing.assert_array_equal(got, np.array(want).astype(np.int32))
    mip = Mip([ints], normalized=False)
    got, _ = run(mod, "gather_u4", mip, [xs, ys], np.int32, pad=12)
    want = [gather_ref(mip.refs[0], xs[k], ys[k], 0) for k in range(60)]
    np.testing.assert_array_equal(got, np.array(want).astype(np.int32))
    one = rng.integers(0, 255, (1, 4, 4, 1)).astype(np.int32)
    mip = Mip([one], normalized=False)
    got, _ = run(mod, "gather_f4", mip, [xs, ys], np.int32, extra=(3,))
    assert (got == 1).all()          # alpha of a one-channel integer texture


# -- both engines, bit for bit ------------------------------------------------------------------

def test_engines_agree_bit_for_bit(mod):
    rng = np.random.default_rng(300)
    n = 240
    xs, ys = (rng.uniform(-2, 3, n).astype(F) for _ in range(2))
    xs[:4] = [np.nan, np.inf, -np.inf, 3e38]
    lods = rng.uniform(-2, 7, n).astype(F)
    lods[4:8] = [np.nan, np.inf, -np.inf, 1e-30]
    dx, dy = (rng.uniform(-1, 1, (n, 2)).astype(F) * F(10.0) ** rng.integers(-4, 2, (n, 1))
              for _ in range(2))
    dx[8:11] = [[np.nan, 0], [np.inf, 1], [0, 0]]
    levels = pyramid(rng, 32, 16, 1, "plain")
    for modes, normalized, linear, mip_linear in itertools.product(
            [("wrap", "border", "clamp"), ("mirror", "clamp", "clamp")], (False, True),
            (False, True), (False, True)):
        mip = Mip(levels, modes=modes, normalized=normalized, linear=linear,
                  mip_linear=mip_linear, bias=0.25, lo=0.5, hi=4.0)
        got = {}
        for eng in ("interp", "jit"):
            old = jit.engine()
            jit.set_engine(eng)
            try:
                got[eng] = [run(mod, k, mip, a, np.uint32, e)[0] for k, a, e in (
                    ("lod2d_f4", [xs, ys, lods], ()), ("grad2d_f4", [xs, ys, dx, dy], ()),
                    ("gather_f4", [xs, ys], (2,)))]
            finally:
                jit.set_engine(old)
        for a, b in zip(got["interp"], got["jit"], strict=True):
            np.testing.assert_array_equal(a, b, err_msg=f"{modes} {normalized} {linear}")


def _both(mod, kernel, mip, args) -> None:
    got = {}
    for eng in ("interp", "jit"):
        old = jit.engine()
        jit.set_engine(eng)
        try:
            got[eng] = run(mod, kernel, mip, args, np.uint32)[0]
        finally:
            jit.set_engine(old)
    np.testing.assert_array_equal(got["interp"], got["jit"], err_msg=kernel)


def test_engines_agree_on_3d_and_cubemap_levels(mod):
    rng = np.random.default_rng(301)
    n = 160
    cs = [rng.uniform(-1.5, 1.5, n).astype(F) for _ in range(3)]
    cs[0][:3] = [np.nan, np.inf, -3e38]
    lods = rng.uniform(-1, 5, n).astype(F)
    dx, dy = (rng.uniform(-1, 1, (n, 4)).astype(F) * F(10.0) ** rng.integers(-3, 1, (n, 1))
              for _ in range(2))
    dx[3:5] = [[np.nan, 0, 0, 0], [0, 0, 0, 0]]
    dy[4] = 0
    for linear, mip_linear in itertools.product((False, True), repeat=2):
        vol = Mip(pyramid(rng, 8, 4, 8, "3d"), "3d", ("wrap", "mirror", "border"),
                  linear=linear, mip_linear=mip_linear, bias=-0.5)
        _both(mod, "lod3d_f4", vol, [*cs, lods])
        _both(mod, "grad3d_f4", vol, [*cs, dx, dy])
        cube = Mip(pyramid(rng, 8, 8, 6, "cube"), "cube", linear=linear,
                   mip_linear=mip_linear, lo=0.25, hi=2.5)
        _both(mod, "lodcube_f4", cube, [*cs, lods])
        _both(mod, "gradcube_f4", cube, [*cs, dx, dy])


def test_cube_gradients_scale_by_the_face_width(mod):
    """tex.grad.cube: the gradients' lengths in face-width texels pick the level."""
    rng = np.random.default_rng(302)
    mip = Mip(pyramid(rng, 8, 8, 6, "cube", c=1), "cube")
    n = 4
    ones = np.ones(n, F)
    dx = np.zeros((n, 4), F)
    dx[:, 0] = [1 / 8, 1 / 4, 1 / 2, 1.0]          # 1, 2, 4, 8 texels: levels 0..3
    got, _ = run(mod, "gradcube_f4", mip, [ones, ones * F(0.25), ones * F(-0.5), dx,
                                           np.zeros((n, 4), F)])
    face, s, t = cube_ref(F(1), F(0.25), F(-0.5))
    for k in range(n):
        w = F(mip.levels[k].shape[2])
        want = mip.refs[k].sample([s * w, t * w], face, True)
        assert got[k, 0] == F(want[0]), (k, got[k], want)


# -- hostile descriptors -----------------------------------------------------------------------

def _desc(**kw):
    base = dict(kind=T.TEX_RESOURCE_PITCH2D, addr=1 << 32, fmt=T.TEX_FORMAT_FLOAT, channels=1,
                width=8, height=4, pitch=32, levels=4, max_lod=3.0)
    base.update(kw)
    return T.tex_desc(**base)


@pytest.mark.parametrize("kw,field", [
    (dict(levels=5), "mip levels"),
    (dict(pitch=64), "pitch"),
    (dict(lod_bias=math.nan), "bias"),
    (dict(min_lod=2.0, max_lod=1.0), "clamps"),
    (dict(max_lod=math.inf), "clamps"),
    (dict(levels=1), "without mip levels"),
    (dict(max_aniso=17), "anisotropy"),
    (dict(fmt=T.TEX_FORMAT_S32, mip_linear=True), "mipmap linear"),
    (dict(kind=T.TEX_RESOURCE_LINEAR, height=1, pitch=0), "pitch2D"),
    (dict(surface=True, max_lod=0.0), "pitch2D"),
    (dict(addr=(1 << 40) - 64), "address space"),
    (dict(shape=T.TEX_SHAPE_3D, depth=4, slice_pitch=256), "slice pitch"),
])
def test_hostile_mipmap_descriptors(kw, field):
    with pytest.raises(GdevError) as e:
        validate(_desc(**kw))
    assert e.value.errno == errno.EINVAL and field in str(e.value), str(e.value)
    validate(_desc())


def test_reserved_field_must_be_zero():
    with pytest.raises(GdevError) as e:
        validate(_desc()._replace(reserved=1))
    assert e.value.errno == errno.EINVAL and "reserved" in str(e.value)


@st.composite
def descriptors(draw):
    """A valid mipmapped descriptor of any shape with up to two fields overwritten."""
    shape = draw(st.integers(0, 5))
    w = draw(st.integers(1, 300))
    h = w if shape in (4, 5) else 1 if shape == 2 else draw(st.integers(1, 300))
    depth = {0: 0, 4: 6, 5: 6 * draw(st.integers(1, 3))}.get(shape, draw(st.integers(1, 40)))
    ch = draw(st.sampled_from([1, 2, 4]))
    pitch = w * 4 * ch
    desc = T.tex_desc(T.TEX_RESOURCE_PITCH2D, draw(st.integers(0, 2**40)) & ~3,
                      T.TEX_FORMAT_FLOAT, ch, w, h, pitch, shape=shape, depth=depth,
                      slice_pitch=pitch * h if shape else 0, levels=draw(st.integers(0, 10)),
                      mip_linear=draw(st.booleans()), max_lod=draw(st.floats(0, 12)),
                      linear=draw(st.booleans()), normalized_coords=draw(st.booleans()))
    if desc.levels <= 1:
        desc = desc._replace(flags=desc.flags & ~T.TEX_MIPMAP_LINEAR, max_lod=0)
    bad = draw(st.dictionaries(st.sampled_from(T.TexDesc._fields),
                               st.integers(0, 2**32 - 1) | st.integers(0, 40), max_size=2))
    return desc._replace(**bad)


@settings(max_examples=300, deadline=None)
@given(descriptors())
def test_any_descriptor_validates_or_names_the_field(desc):
    """A hostile descriptor with mip fields is a texture whose every level stays inside the
    address space, or EINVAL naming a field: nothing else."""
    try:
        tex = validate(desc)
    except GdevError as e:
        assert e.errno == errno.EINVAL and "texture descriptor: " in str(e)
        return
    for lv in range(tex.levels):
        level = tex.level(lv)
        assert tex.addr <= level.addr and level.addr + level.span <= tex.addr + tex.span
        assert level.width >= 1 and level.height >= 1 and level.depth >= 1
    assert tex.addr + tex.span <= 1 << 40
