"""3D, layered and cubemap textures (``tex.3d``, ``tex.a1d``, ``tex.a2d``, ``tex.cube``,
``tex.acube``, data/tex3d.cu) against a per-sample reference of CUDA's documented sampling
(the programming guide's texture-fetching appendix and its cubemap table): trilinear
filtering with 9-bit weights, address modes per dimension, normalised coordinates, layers
selected and clamped and never filtered, every cubemap face and its edges; the engines
agree bit for bit; kinds that do not match the instruction and hostile descriptors fault or
are refused.  conftest runs each test on both engines."""

from __future__ import annotations

import errno
import itertools
import math

import numpy as np
import pytest

from gdevd.errors import GdevError, KernelFault
from gdevd.gpu.texture import TextureTable
from gdevd.runtime.texdesc import validate
from libgdev import texture as T

from .helpers import Device, load
from .test_texture import address

MODES = {"wrap": T.TEX_ADDRESS_WRAP, "clamp": T.TEX_ADDRESS_CLAMP,
         "mirror": T.TEX_ADDRESS_MIRROR, "border": T.TEX_ADDRESS_BORDER}
FMT = {"f4": T.TEX_FORMAT_FLOAT, "u1": T.TEX_FORMAT_U8, "i4": T.TEX_FORMAT_S32}
SHAPE = {"3d": T.TEX_SHAPE_3D, "a1d": T.TEX_SHAPE_LAYERED_1D, "a2d": T.TEX_SHAPE_LAYERED_2D,
         "cube": T.TEX_SHAPE_CUBEMAP, "acube": T.TEX_SHAPE_CUBEMAP_LAYERED}
BORDER = (0.25, -2.0, 7.5, 3.0)
F = np.float32


@pytest.fixture(scope="module")
def mod():
    return load("tex3d")


# -- the reference: one sample at a time, straight from the guide ------------------------------

class Ref:
    """A texture as a (slices, height, width, channels) array and its sampling state."""

    def __init__(self, data, modes=("clamp",) * 3, normalized=False, linear=False,
                 read_norm=False) -> None:
        self.data, self.modes, self.normalized = data, modes, normalized
        self.linear, self.read_norm = linear, read_norm

    def address(self, i: int, n: int, dim: int, normalized: bool) -> int | None:
        return address(self.modes[dim], normalized, i, n)

    def point(self, ii: list[int], s0: int, normalized: bool) -> list[float]:
        d, h, w, c = self.data.shape
        at = [self.address(i, n, k, normalized)
              for k, (i, n) in enumerate(zip(ii, (w, h, d), strict=False))]
        if None in at:
            return list(BORDER)
        at += [0] * (3 - len(at))
        out = [0.0, 0.0, 0.0, 1.0]
        for k in range(c):
            v = self.data[s0 + at[2], at[1], at[0], k]
            out[k] = max(float(v) / 255, -1.0) if self.read_norm else float(v)
        return out

    def sample(self, us: list[F], s0: int = 0, normalized: bool | None = None) -> list[float]:
        """Sample at texel coordinates ``us`` (already scaled) of the slices from ``s0``."""
        normalized = self.normalized if normalized is None else normalized
        if not self.linear:
            return self.point([math.floor(u) if math.isfinite(u) else 0 for u in us], s0,
                              normalized)
        taps = []
        for u in us:
            ub = float(F(u) - F(0.5))
            i = math.floor(ub)
            a = round((ub - i) * 256) / 256
            taps.append([(i, 1 - a), (i + 1, a)])
        out = np.zeros(4)
        for combo in itertools.product(*taps):
            wgt = math.prod(wt for _, wt in combo)
            out += wgt * np.array(self.point([i for i, _ in combo], s0, normalized))
        return list(out)

    def scaled(self, xs: list[float]) -> list[F]:
        d, h, w, _ = self.data.shape
        return [F(x) * F(n) if self.normalized else F(x)
                for x, n in zip(xs, (w, h, d), strict=False)]


def cube_ref(x: float, y: float, z: float) -> tuple[int, F, F]:
    """The guide's cubemap table: (face, s, t) of direction (x, y, z)."""
    x, y, z = F(x), F(y), F(z)
    ax, ay, az = abs(x), abs(y), abs(z)
    if ax >= ay and ax >= az:
        face, m, s, t = (0, ax, -z, -y) if x >= 0 else (1, ax, z, -y)
    elif ay >= az:
        face, m, s, t = (2, ay, x, z) if y >= 0 else (3, ay, x, -z)
    else:
        face, m, s, t = (4, az, x, -y) if z >= 0 else (5, az, -x, -y)
    with np.errstate(all="ignore"):
        return face, (s / m + F(1)) / F(2), (t / m + F(1)) / F(2)


# -- running the kernels ------------------------------------------------------------------------

def _texture(dev, table, data, shape: str, ref: Ref, pad: int = 8, surface=False) -> int:
    """Put ``data`` (slices, h, w, c) on the device, rows ``pad`` bytes beyond one row and
    slices one spare row apart; its texture (or surface) object of ``shape``."""
    d, h, w, c = data.shape
    row = w * c * data.dtype.itemsize
    pitch = row + pad
    img = np.zeros((d, h + 1, pitch), np.uint8)
    img[:, :h, :row] = data.reshape(d, h, row // data.dtype.itemsize).view(np.uint8)
    va = dev.put(img)
    if surface:
        desc = T.tex_desc(T.TEX_RESOURCE_PITCH2D, va, FMT[data.dtype.str[1:]], c, w, h, pitch,
                          surface=True, shape=SHAPE[shape], depth=d,
                          slice_pitch=(h + 1) * pitch)
    else:
        desc = T.tex_desc(T.TEX_RESOURCE_PITCH2D, va, FMT[data.dtype.str[1:]], c, w, h, pitch,
                          modes=tuple(MODES[m] for m in ref.modes), linear=ref.linear,
                          normalized_coords=ref.normalized, read_normalized=ref.read_norm,
                          border=BORDER, shape=SHAPE[shape], depth=d,
                          slice_pitch=(h + 1) * pitch)
    return table.create(validate(desc))


def _run(mod, kernel, handle, args, table, dev, out_dtype=np.float32) -> np.ndarray:
    n = args[0].size
    ins = [dev.put(a) for a in args]
    out = dev.alloc(16 * n)
    dev.launch(mod, kernel, (n + 63) // 64, 64, handle, *ins, out, n, textures=table)
    return dev.get(out, 4 * n, out_dtype).reshape(n, 4)


def _case(mod, data, shape, ref, kernel, coords, layers=None, out_dtype=np.float32):
    dev, table = Device(), TextureTable()
    h = _texture(dev, table, data, shape, ref)
    args = [np.asarray(c, np.float32) for c in coords]
    if layers is not None:
        args.append(np.asarray(layers, np.int32))
    return _run(mod, kernel, h, args, table, dev, out_dtype)


def _points(n: int, size: int, normalized: bool, rng) -> np.ndarray:
    """Random points, texel centres and edges, and points outside, in one dimension."""
    lo, hi = (-1.5, 2.5) if normalized else (-3.0, size + 3.0)
    grid = np.concatenate([np.arange(-2, size + 2) + 0.5, np.arange(-2, size + 2, dtype=float)])
    xs = np.concatenate([rng.uniform(lo, hi, n), np.resize(grid, 40)])
    if normalized:
        xs[n:] /= size
    return xs.astype(np.float32)


# -- 3D ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("modes", [("clamp",) * 3, ("wrap", "mirror", "border"),
                                   ("border", "wrap", "mirror"), ("mirror", "clamp", "wrap")])
@pytest.mark.parametrize("normalized", [False, True])
@pytest.mark.parametrize("linear", [False, True])
def test_tex3d_modes_per_dimension(mod, modes, normalized, linear):
    rng = np.random.default_rng(hash((modes, normalized, linear)) & 0xFFFF)
    data = rng.uniform(-10, 10, (3, 4, 5, 4)).astype(np.float32)
    ref = Ref(data, modes, normalized, linear)
    xs, ys, zs = (rng.permutation(_points(120, n, normalized, rng)) for n in (5, 4, 3))
    got = _case(mod, data, "3d", ref, "tex3d_f4", [xs, ys, zs])
    want = [ref.sample(ref.scaled([xs[k], ys[k], zs[k]])) for k in range(xs.size)]
    np.testing.assert_allclose(got, np.array(want, np.float32), rtol=1e-5, atol=1e-5)


def test_tex3d_trilinear_weights_are_nine_bit(mod):
    """Between slices 0 and 1 (all else equal) the blend moves in 1/256ths."""
    data = np.zeros((2, 1, 1, 1), np.float32)
    data[1] = 1.0
    zs = 0.5 + np.arange(0, 1, 1 / 1024)
    got = _case(mod, data, "3d", Ref(data, linear=True), "tex3d_f4",
                [np.full(zs.size, 0.5), np.full(zs.size, 0.5), zs])
    assert np.unique(got[:, 0]).size == 257 and set(np.unique(got[:, 0] * 256)) <= \
        set(range(257))


def test_tex3d_integer_and_normalised_byte_formats(mod):
    rng = np.random.default_rng(5)
    ints = rng.integers(-1000, 1000, (2, 3, 4, 2)).astype(np.int32)
    xs, ys, zs = rng.uniform(-1, 5, 60), rng.uniform(-1, 4, 60), rng.uniform(-1, 3, 60)
    ref = Ref(ints)
    got = _case(mod, ints, "3d", ref, "tex3d_i4", [xs, ys, zs], out_dtype=np.int32)
    want = [ref.sample(ref.scaled([xs[k], ys[k], zs[k]])) for k in range(60)]
    np.testing.assert_array_equal(got, np.array(want).astype(np.int32))
    u8 = rng.integers(0, 256, (3, 2, 2, 4)).astype(np.uint8)
    ref = Ref(u8, ("wrap",) * 3, normalized=True, linear=True, read_norm=True)
    xs, ys, zs = rng.uniform(-1, 2, 60), rng.uniform(-1, 2, 60), rng.uniform(-1, 2, 60)
    got = _case(mod, u8, "3d", ref, "tex3d_f4", [xs, ys, zs])
    want = [ref.sample(ref.scaled([xs[k], ys[k], zs[k]])) for k in range(60)]
    np.testing.assert_allclose(got, np.array(want, np.float32), rtol=1e-5, atol=1e-6)


# -- layered ----------------------------------------------------------------------------------

@pytest.mark.parametrize("linear", [False, True])
@pytest.mark.parametrize("normalized", [False, True])
def test_layers_select_clamp_and_are_never_filtered(mod, linear, normalized):
    rng = np.random.default_rng(11)
    data = rng.uniform(-5, 5, (4, 3, 6, 2)).astype(np.float32)
    ref = Ref(data, ("mirror", "border", "clamp"), normalized, linear)
    xs, ys = _points(80, 6, normalized, rng), rng.permutation(_points(80, 3, normalized, rng))
    layers = np.resize(np.array([0, 1, 2, 3, -1, 4, -(1 << 31), (1 << 31) - 1]), xs.size)
    got = _case(mod, data, "a2d", ref, "tex2dl_f4", [xs, ys], layers)
    want = [ref.sample(ref.scaled([xs[k], ys[k]]), min(max(int(layers[k]), 0), 3))
            for k in range(xs.size)]
    np.testing.assert_allclose(got, np.array(want, np.float32), rtol=1e-5, atol=1e-5)
    one = data[:, :1]                                   # 1D layered: one row per layer
    got = _case(mod, one, "a1d", ref, "tex1dl_f4", [xs], layers)
    want = [ref.sample(ref.scaled([xs[k]]), min(max(int(layers[k]), 0), 3))
            for k in range(xs.size)]
    np.testing.assert_allclose(got, np.array(want, np.float32), rtol=1e-5, atol=1e-5)


# -- cubemaps ---------------------------------------------------------------------------------

def _directions(rng) -> np.ndarray:
    """Each face's centre, edges and corners, ties between axes, zero, and random ones."""
    special = [(1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1),
               (1, 1, 0), (-1, 1, 1), (1, -1, -1), (0, 0, 0), (2, 0.999, -0.999),
               (-0.5, 0.5, 0.25), (0.3, -0.9, 0.9), (0.1, 0.2, -0.95)]
    edges = [(m, s, t) for m in (1.0, -1.0) for s in (0.999, -0.999, 0.5) for t in
             (0.999, -0.999, 0.0)]
    perms = [p for e in edges for p in (e, (e[1], e[0], e[2]), (e[1], e[2], e[0]))]
    return np.concatenate([np.array(special + perms), rng.uniform(-3, 3, (150, 3))]).astype(
        np.float32)


@pytest.mark.parametrize("linear", [False, True])
@pytest.mark.parametrize("mode", ["clamp", "border", "wrap"])
def test_cubemap_faces_and_edges(mod, linear, mode):
    rng = np.random.default_rng(21)
    w = 4
    data = rng.uniform(-3, 3, (6, w, w, 4)).astype(np.float32)
    ref = Ref(data, (mode,) * 3, linear=linear)
    dirs = _directions(rng)
    got = _case(mod, data, "cube", ref, "cube_f4", list(dirs.T))
    want = []
    for x, y, z in dirs:
        face, s, t = cube_ref(x, y, z)
        us = [0.0 if math.isnan(v) else F(v) * F(w) for v in (s, t)]
        want.append(ref.sample(us, face, normalized=True))
    np.testing.assert_allclose(got, np.array(want, np.float32), rtol=1e-5, atol=1e-5)
    faces = {cube_ref(*d)[0] for d in dirs}
    assert faces == set(range(6))


def test_layered_cubemap(mod):
    rng = np.random.default_rng(22)
    data = rng.uniform(-3, 3, (18, 2, 2, 1)).astype(np.float32)     # 3 cubemaps
    ref = Ref(data, linear=True)
    dirs = _directions(rng)
    layers = np.resize(np.array([0, 1, 2, 3, -2]), len(dirs))
    got = _case(mod, data, "acube", ref, "cubel_f4", list(dirs.T), layers)
    want = []
    for (x, y, z), layer in zip(dirs, layers, strict=True):
        face, s, t = cube_ref(x, y, z)
        us = [0.0 if math.isnan(v) else F(v) * F(2) for v in (s, t)]
        want.append(ref.sample(us, 6 * min(max(int(layer), 0), 2) + face, normalized=True))
    np.testing.assert_allclose(got, np.array(want, np.float32), rtol=1e-5, atol=1e-5)


# -- both engines, bit for bit ---------------------------------------------------------------

@pytest.mark.parametrize("shape", ["3d", "a2d", "cube"])
def test_engines_agree_bit_for_bit(mod, shape):
    from gdevd.gpu.ptx import jit
    rng = np.random.default_rng(300)
    dims = {"3d": (3, 4, 5, 4), "a2d": (3, 4, 5, 4), "cube": (6, 3, 3, 4)}[shape]
    data = rng.uniform(-50, 50, dims).astype(np.float32)
    n = 240
    cs = [rng.uniform(-8, 8, n).astype(np.float32) for _ in range(3)]
    cs[0][:5] = [np.nan, np.inf, -np.inf, 3e38, 1e-30]
    cs[2][5:9] = [np.nan, np.inf, -np.inf, -3e38]
    kernel, args = {"3d": ("tex3d_f4", cs), "a2d": ("tex2dl_u4", cs[:2]),
                    "cube": ("cube_f4", cs)}[shape]
    layers = None if shape != "a2d" else rng.integers(-2, 5, n)
    for modes, normalized, linear in itertools.product(
            [("wrap", "border", "mirror"), ("clamp", "mirror", "border")], (False, True),
            (False, True)):
        got = {}
        for eng in ("interp", "jit"):
            old = jit.engine()
            jit.set_engine(eng)
            try:
                got[eng] = _case(mod, data, shape, Ref(data, modes, normalized, linear),
                                 kernel, args, layers, np.uint32)
            finally:
                jit.set_engine(old)
        np.testing.assert_array_equal(got["interp"], got["jit"],
                                      err_msg=f"{modes} {normalized} {linear}")


def test_the_compiled_engine_translates_them(mod, engine):
    dev, table = Device(), TextureTable()
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4, 1)
    h = _texture(dev, table, data, "3d", Ref(data))
    coords = [dev.put(np.array([k + 0.5], np.float32)) for k in (3, 2, 1)]
    out = dev.alloc(16)
    launch = dev.launch(mod, "tex3d_f4", 1, 1, h, *coords, out, 1, textures=table)
    assert launch.engine == ("jit" if engine == "jit" else "interp")
    assert dev.get(out, 1, np.float32)[0] == data[1, 2, 3, 0]


# -- surfaces ---------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,kernel", [("3d", "surf3d_add"), ("a2d", "surf2dl_add"),
                                          ("a1d", "surf1dl_add"), ("cube", "surf2dl_add")])
def test_surfaces_read_and_write_every_slice(mod, shape, kernel):
    dev, table = Device(), TextureTable()
    d, h, w = (6, 3, 3) if shape == "cube" else (3, 1 if shape == "a1d" else 4, 5)
    data = np.random.default_rng(4).uniform(-9, 9, (d, h, w, 1)).astype(np.float32)
    s = _texture(dev, table, data, shape, Ref(data), surface=True)
    va = table.get(s, surface=True).addr
    args = (w, d) if shape == "a1d" else (w, h, d)
    dev.launch(mod, kernel, (d * h * w + 63) // 64, 64, s, *args, textures=table)
    pitch = w * 4 + 8
    got = dev.get(va, d * (h + 1) * pitch // 4, np.float32).reshape(d, h + 1, pitch // 4)
    np.testing.assert_array_equal(got[:, :h, :w], 2 * data[..., 0] + 1)
    assert not got[:, h:, :].any() and not got[:, :, w:].any()     # padding untouched


def _surf_read(mod, kernel, xyz):
    dev, table = Device(), TextureTable()
    data = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4, 1) + 1
    s = _texture(dev, table, data, "3d", Ref(data), surface=True)
    n = len(xyz)
    ins = [dev.put(np.array(c, np.int32)) for c in zip(*xyz, strict=True)]
    out = dev.alloc(4 * n)
    dev.launch(mod, kernel, 1, n, s, *ins, out, n, textures=table)
    return data, dev.get(out, n, np.float32)


def test_surface_boundary_modes_per_dimension(mod):
    xyz = [(0, 0, 0), (3, 2, 1), (4, 0, 0), (0, 3, 0), (0, 0, 2), (-1, 1, 1), (1, 1, -1)]
    data, got = _surf_read(mod, "surf3d_read_zero", xyz)
    np.testing.assert_array_equal(got, [1, data[1, 2, 3, 0], 0, 0, 0, 0, 0])
    _, got = _surf_read(mod, "surf3d_read_clamp", xyz)
    np.testing.assert_array_equal(got, [data[min(max(z, 0), 1), min(max(y, 0), 2),
                                              min(max(x, 0), 3), 0] for x, y, z in xyz])
    with pytest.raises(KernelFault, match="out-of-bounds surface access in surf3d_read_trap"):
        _surf_read(mod, "surf3d_read_trap", [(0, 0, 2)])


# -- kinds that do not match, hostile descriptors ---------------------------------------------

def test_a_kind_that_does_not_match_the_instruction_faults(mod):
    dev, table = Device(), TextureTable()
    plain = table.create(validate(T.tex_desc(T.TEX_RESOURCE_PITCH2D, dev.put(np.zeros(64)),
                                             T.TEX_FORMAT_FLOAT, 1, 4, 4, 16)))
    data = np.zeros((2, 2, 2, 1), np.float32)
    vol = _texture(dev, table, data, "3d", Ref(data))
    cube = _texture(dev, table, np.zeros((6, 2, 2, 1), np.float32), "cube", Ref(data))
    one = [np.zeros(1, np.float32)] * 3
    for h, kernel, args, words in [
            (plain, "tex3d_f4", one, "tex.3d on a 1D/2D texture object in tex3d_f4 at line"),
            (vol, "tex2dl_f4", one[:2] + [np.zeros(1, np.int32)],
             "tex.a2d on a 3d texture object in tex2dl_f4 at line"),
            (cube, "cubel_f4", one + [np.zeros(1, np.int32)],
             "tex.acube on a cube texture object in cubel_f4 at line")]:
        with pytest.raises(KernelFault) as info:
            _run(mod, kernel, h, args, table, dev)
        assert info.value.errno == errno.EFAULT and words in str(info.value)
    surf = _texture(dev, table, data, "3d", Ref(data), surface=True)
    with pytest.raises(KernelFault,
                       match="a2d surface access on a 3d surface object in surf2dl_add at line"):
        dev.launch(mod, "surf2dl_add", 1, 8, surf, 2, 2, 2, textures=table)


BASE = dict(kind=T.TEX_RESOURCE_PITCH2D, addr=1 << 32, format=T.TEX_FORMAT_FLOAT, channels=1,
            width=16, height=8, pitch=64, shape=T.TEX_SHAPE_3D, depth=4, slice_pitch=512)


@pytest.mark.parametrize("change,words", [
    ({"shape": 6}, "shape"), ({"shape": 1 << 31}, "shape"),
    ({"kind": T.TEX_RESOURCE_LINEAR, "height": 1, "pitch": 0}, "pitch2D"),
    ({"depth": 0}, "depth"), ({"depth": (1 << 14) + 1}, "depth"), ({"depth": 1 << 63}, "depth"),
    ({"slice_pitch": 511}, "slice pitch"), ({"slice_pitch": 0}, "slice pitch"),
    ({"slice_pitch": (1 << 36) + 4}, "slice pitch"), ({"slice_pitch": 514}, "slice pitch"),
    ({"slice_pitch": 1 << 36, "depth": 1 << 14}, "address space"),
    ({"addr": (1 << 40) - 1024}, "address space"), ({"width": (1 << 14) + 1}, "pitch2D"),
    ({"shape": T.TEX_SHAPE_LAYERED_2D, "depth": 2049}, "depth"),
    ({"shape": T.TEX_SHAPE_LAYERED_1D}, "rows"),
    ({"shape": T.TEX_SHAPE_CUBEMAP, "depth": 6}, "square"),
    ({"shape": T.TEX_SHAPE_CUBEMAP, "height": 16, "pitch": 64, "slice_pitch": 1024}, "depth"),
    ({"shape": T.TEX_SHAPE_CUBEMAP_LAYERED, "height": 16, "depth": 14, "slice_pitch": 1024},
     "multiple of 6"),
    ({"shape": T.TEX_SHAPE_PLAIN}, "plain"), ({"shape": T.TEX_SHAPE_PLAIN, "depth": 0}, "plain")])
def test_hostile_descriptors_are_refused(change, words):
    good = T.tex_desc(**{k: v for k, v in BASE.items() if k not in ("kind", "addr", "format")},
                      kind=BASE["kind"], addr=BASE["addr"], fmt=BASE["format"])
    assert validate(good).span == 3 * 512 + 7 * 64 + 64
    with pytest.raises(GdevError) as info:
        validate(good._replace(**change))
    assert info.value.errno == errno.EINVAL and words in str(info.value)


def test_plain_descriptors_keep_their_meaning():
    """depth 0 and slice pitch 0 (what an old client sends) are the 1D/2D texture."""
    t = validate(T.tex_desc(T.TEX_RESOURCE_PITCH2D, 1 << 32, T.TEX_FORMAT_FLOAT, 1, 4, 2, 16))
    assert (t.shape, t.depth, t.slice_pitch, t.span) == ("plain", 1, 0, 32)
