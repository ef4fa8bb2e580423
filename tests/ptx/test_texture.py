"""Texture fetches (``tex.1d``/``tex.2d``, data/texture.cu) against a per-sample reference of
CUDA's documented sampling (the programming guide's texture-fetching appendix): point and
linear filtering, every address mode, normalised coordinates, normalised-float reads, and
the faults of a bad handle or unmapped texels.  conftest runs each test on both engines."""

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

FMT = {np.dtype(np.float32): T.TEX_FORMAT_FLOAT, np.dtype(np.float16): T.TEX_FORMAT_HALF,
       np.dtype(np.uint8): T.TEX_FORMAT_U8, np.dtype(np.int8): T.TEX_FORMAT_S8,
       np.dtype(np.uint16): T.TEX_FORMAT_U16, np.dtype(np.int16): T.TEX_FORMAT_S16,
       np.dtype(np.uint32): T.TEX_FORMAT_U32, np.dtype(np.int32): T.TEX_FORMAT_S32}
NORM = {"u1": 255.0, "u2": 65535.0, "i1": 127.0, "i2": 32767.0}
MODES = {"wrap": T.TEX_ADDRESS_WRAP, "clamp": T.TEX_ADDRESS_CLAMP,
         "mirror": T.TEX_ADDRESS_MIRROR, "border": T.TEX_ADDRESS_BORDER}
BORDER = (0.25, -2.0, 7.5, 3.0)


@pytest.fixture(scope="module")
def mod():
    return load("texture")


# -- the reference: one sample at a time, straight from the appendix ---------------------------

def address(mode: str, normalized: bool, i: int, n: int) -> int | None:
    """Texel index ``i`` of a dimension of ``n`` texels under address ``mode`` (None: the
    border colour)."""
    if not normalized and mode in ("wrap", "mirror"):
        mode = "clamp"
    if mode == "wrap":
        return i % n
    if mode == "mirror":
        m = i % (2 * n)
        return 2 * n - 1 - m if m >= n else m
    if mode == "border":
        return i if 0 <= i < n else None
    return min(max(i, 0), n - 1)


class Ref:
    """A texture as a (height, width, channels) array and its sampling state."""

    def __init__(self, data: np.ndarray, mode="clamp", normalized=False, linear=False,
                 read_norm=False, buffer=False) -> None:
        self.data, self.mode, self.normalized = data, mode, normalized
        self.linear, self.read_norm, self.buffer = linear, read_norm, buffer

    def texel(self, i: int, j: int) -> list[float]:
        h, w, c = self.data.shape
        out = [0.0, 0.0, 0.0, 1.0]
        for k in range(c):
            v = self.data[j, i, k]
            if self.read_norm:
                v = max(float(v) / NORM[self.data.dtype.str[1:]], -1.0)
            out[k] = float(v) if self.data.dtype.kind == "f" or self.read_norm else int(v)
        return out

    def address(self, i: int, n: int) -> int | None:
        return address(self.mode, self.normalized, i, n)

    def point(self, ii: list[int]) -> list[float]:
        h, w, _ = self.data.shape
        i = self.address(ii[0], w)
        j = self.address(ii[1], h) if len(ii) > 1 else 0
        if i is None or j is None:
            return list(BORDER)
        return self.texel(i, j)

    def sample(self, xs: list[float]) -> list[float]:
        h, w, _ = self.data.shape
        us = [np.float32(x) * np.float32(n) if self.normalized else np.float32(x)
              for x, n in zip(xs, (w, h), strict=False)]
        if not self.linear:
            return self.point([math.floor(u) for u in us])
        taps = []
        for u in us:
            ub = float(np.float32(u) - np.float32(0.5))
            i = math.floor(ub)
            a = round((ub - i) * 256) / 256
            taps.append([(i, 1 - a), (i + 1, a)])
        out = np.zeros(4)
        for combo in itertools.product(*taps):
            wgt = math.prod(wt for _, wt in combo)
            out += wgt * np.array(self.point([i for i, _ in combo]))
        return list(out)

    def fetch(self, i: int) -> list[float]:
        w = self.data.shape[1]
        return self.texel(i, 0) if 0 <= i < w else [0, 0, 0, 0]


# -- running the kernels ------------------------------------------------------------------------

def _texture(dev: Device, table: TextureTable, data: np.ndarray, pitch2d: bool, ref: Ref,
             pad: int = 0) -> int:
    """Put ``data`` (h, w, c) on the device (rows ``pad`` bytes apart beyond one row)."""
    h, w, c = data.shape
    row = w * c * data.dtype.itemsize
    pitch = row + pad if pitch2d else 0
    img = np.zeros((h, pitch or row), np.uint8)
    img[:, :row] = data.reshape(h, row // data.dtype.itemsize).view(np.uint8)
    va = dev.put(img)
    desc = T.tex_desc(T.TEX_RESOURCE_PITCH2D if pitch2d else T.TEX_RESOURCE_LINEAR, va,
                      FMT[data.dtype], c, w, h if pitch2d else 1, pitch,
                      modes=(MODES[ref.mode],) * 3, linear=ref.linear,
                      normalized_coords=ref.normalized, read_normalized=ref.read_norm,
                      border=BORDER)
    return table.create(validate(desc))


def _run(mod, kernel: str, handle: int, coords: list[np.ndarray], table, dev=None,
         out_dtype=np.float32) -> np.ndarray:
    dev = dev or Device()
    n = coords[0].size
    ins = [dev.put(c) for c in coords]
    out = dev.alloc(16 * n)
    dev.launch(mod, kernel, (n + 63) // 64, 64, handle, *ins, out, n, textures=table)
    return dev.get(out, 4 * n, out_dtype).reshape(n, 4)


def _float_case(mod, data, pitch2d, ref, xs, ys=None, kernel=None):
    dev, table = Device(), TextureTable()
    h = _texture(dev, table, data, pitch2d, ref, pad=24)
    coords = [np.asarray(xs, np.float32)] + ([] if ys is None else [np.asarray(ys, np.float32)])
    kernel = kernel or ("tex2d_f4" if ys is not None else "tex1d_f4")
    got = _run(mod, kernel, h, coords, table, dev)
    want = np.array([ref.sample([float(c[k]) for c in coords]) for k in range(coords[0].size)],
                    np.float32)
    return got, want


def _coords_2d(w: int, h: int, normalized: bool, rng) -> tuple[np.ndarray, np.ndarray]:
    """Grid points, texel centres and edges, and points far outside, in both dimensions."""
    lo, hi = (-1.5, 2.5) if normalized else (-3.0, w + 3.0)
    xs = np.concatenate([rng.uniform(lo, hi, 150), np.arange(-2, w + 2) + 0.5,
                         np.arange(-2, w + 2, dtype=float)])
    lo, hi = (-1.5, 2.5) if normalized else (-3.0, h + 3.0)
    ys = rng.uniform(lo, hi, xs.size)
    if normalized:
        xs[150:] /= w
    return xs.astype(np.float32), ys.astype(np.float32)


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("normalized", [False, True])
@pytest.mark.parametrize("linear", [False, True])
def test_tex2d_float_modes(mod, mode, normalized, linear):
    rng = np.random.default_rng(hash((mode, normalized, linear)) & 0xFFFF)
    data = rng.uniform(-10, 10, (5, 7, 4)).astype(np.float32)
    ref = Ref(data, mode, normalized, linear)
    xs, ys = _coords_2d(7, 5, normalized, rng)
    got, want = _float_case(mod, data, True, ref, xs, ys)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("linear", [False, True])
def test_tex1d_float_normalized(mod, mode, linear):
    rng = np.random.default_rng(7)
    data = rng.uniform(-1, 1, (1, 9, 2)).astype(np.float32)
    ref = Ref(data, mode, True, linear)
    xs = np.concatenate([rng.uniform(-2.5, 2.5, 200), (np.arange(-3, 12) + 0.5) / 9])
    got, want = _float_case(mod, data, False, ref, xs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_linear_weights_are_nine_bit(mod):
    """Between two texels 0 and 1 the weight moves in steps of 1/256, as the hardware's."""
    data = np.array([[[0.0], [1.0]]], np.float32)
    xs = 0.5 + np.arange(0, 1, 1 / 1024)
    got, _ = _float_case(mod, data, True, Ref(data, "clamp", linear=True), xs,
                         np.full(xs.size, 0.5))
    assert set(np.unique(got[:, 0] * 256)) <= set(range(257))
    assert np.unique(got[:, 0]).size == 257     # 0, 1/256, ..., 1


@pytest.mark.parametrize("dtype", ["u1", "i1", "u2", "i2"])
def test_normalized_float_reads(mod, dtype):
    info = np.iinfo(np.dtype(dtype))
    vals = np.array([info.min, info.min + 1, -1 if info.min else 1, 0, 1, info.max - 1,
                     info.max, 3], dtype)
    data = vals.reshape(1, 2, 4)
    ref = Ref(data, "clamp", read_norm=True)
    got, want = _float_case(mod, data, True, ref, [0.5, 1.5, 1.7, 0.1], [0.5] * 4)
    np.testing.assert_array_equal(got, want)
    assert got.min() >= -1.0 and got.max() <= 1.0


def test_half_and_linear_filter_of_normalized_bytes(mod):
    rng = np.random.default_rng(3)
    half = rng.uniform(-4, 4, (3, 4, 1)).astype(np.float16)
    xs, ys = rng.uniform(-1, 5, 64), rng.uniform(-1, 4, 64)
    got, want = _float_case(mod, half, True, Ref(half, "clamp", linear=True), xs, ys)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    u8 = rng.integers(0, 256, (3, 4, 4), dtype=np.uint8)
    got, want = _float_case(mod, u8, True, Ref(u8, "border", linear=True, read_norm=True),
                            xs, ys)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kernel,dtype,channels", [
    ("tex2d_u4", "u1", 4), ("tex2d_i4", "i1", 4), ("tex2d_i4", "i2", 2),
    ("tex2d_u4", "u2", 1), ("tex2d_i4", "i4", 4), ("tex2d_u4", "u4", 2)])
def test_tex2d_element_reads(mod, kernel, dtype, channels):
    rng = np.random.default_rng(11)
    info = np.iinfo(np.dtype(dtype))
    data = rng.integers(info.min, info.max, (4, 6, channels), dtype=dtype, endpoint=True)
    ref = Ref(data, "border")
    xs, ys = rng.uniform(-2, 8, 100), rng.uniform(-2, 6, 100)
    got, want = _float_case(mod, data, True, ref, xs, ys, kernel=kernel)
    out_dt = np.int32 if kernel == "tex2d_i4" else np.uint32
    want_i = np.array([ref.sample([x, y]) for x, y in zip(
        xs.astype(np.float32), ys.astype(np.float32), strict=True)])
    border = np.all(want_i == np.array(BORDER), axis=1)
    assert border.any() and not border.all()
    np.testing.assert_array_equal(got.view(out_dt)[~border],
                                  want_i[~border].astype(np.int64).astype(out_dt))


@pytest.mark.parametrize("kernel,dtype", [("fetch_f4", "f4"), ("fetch_i4", "i1"),
                                          ("fetch_u4", "u2"), ("fetch_f4", "u1")])
def test_tex1dfetch_linear(mod, kernel, dtype):
    """tex1Dfetch: integer texel indices, never filtered; outside the buffer reads zeros."""
    rng = np.random.default_rng(5)
    dt = np.dtype(dtype)
    data = (rng.uniform(-100, 100, (1, 37, 4)).astype(dt) if dt.kind == "f" else
            rng.integers(np.iinfo(dt).min, np.iinfo(dt).max, (1, 37, 4), dtype=dt))
    norm = kernel == "fetch_f4" and dt.kind != "f"
    ref = Ref(data, "wrap", read_norm=norm, buffer=True)
    dev, table = Device(), TextureTable()
    h = _texture(dev, table, data, False, ref)
    idx = np.array([-(1 << 31), -5, -1, *range(37), 37, 38, 1 << 30], np.int32)
    out_dt = {"fetch_f4": np.float32, "fetch_i4": np.int32, "fetch_u4": np.uint32}[kernel]
    got = _run(mod, kernel, h, [idx], table, dev, out_dt)
    want = np.array([ref.fetch(int(i)) for i in idx])
    if out_dt is np.float32:
        np.testing.assert_array_equal(got, want.astype(np.float32))
    else:
        np.testing.assert_array_equal(got, want.astype(np.int64).astype(out_dt))


def test_lanes_with_different_handles(mod):
    dev, table = Device(), TextureTable()
    a = np.arange(64, dtype=np.float32).reshape(1, 64, 1)
    ha = _texture(dev, table, a, False, Ref(a))
    hb = _texture(dev, table, -a, False, Ref(-a))
    out = dev.alloc(4 * 100)
    dev.launch(mod, "fetch_two", 2, 64, ha, hb, out, 100, textures=table)
    got = dev.get(out, 100, np.float32)
    k = np.arange(100)
    np.testing.assert_array_equal(got, np.where(k & 1, -(k >> 1), k >> 1).astype(np.float32))


# -- faults -----------------------------------------------------------------------------------

def _fault(mod, handle, table, dev):
    idx = dev.put(np.zeros(8, np.int32))
    out = dev.alloc(16 * 8)
    with pytest.raises(KernelFault) as info:
        dev.launch(mod, "fetch_f4", 1, 8, handle, idx, out, 8, textures=table)
    return info.value


def test_bad_handles_fault_with_kernel_and_line(mod):
    dev, table = Device(), TextureTable()
    data = np.ones((1, 4, 4), np.float32)
    h = _texture(dev, table, data, False, Ref(data))
    other = TextureTable()
    h_other = _texture(dev, other, data, False, Ref(data))
    for bad in (h ^ 1, 0, h_other):
        e = _fault(mod, bad, table, dev)
        assert e.errno == errno.EFAULT
        assert "invalid texture object in fetch_f4 at line" in str(e)
        assert "0x" not in str(e)
    table.destroy(h)
    assert "invalid texture object" in str(_fault(mod, h, table, dev))
    e = _fault(mod, h, None, dev)            # a launch without a table: the same
    assert "invalid texture object in fetch_f4 at line" in str(e)


def test_texels_over_unmapped_memory_fault(mod):
    dev, table = Device(), TextureTable()
    va = dev.alloc(4096, align=4096)      # a page of its own
    dev.alloc(4096, align=4096)
    h = table.create(validate(T.tex_desc(T.TEX_RESOURCE_LINEAR, va, T.TEX_FORMAT_FLOAT, 4,
                                         16)))
    dev.mmu.unmap(va, 4096)
    e = _fault(mod, h, table, dev)
    assert e.errno == errno.EFAULT and "illegal address" in str(e) and "fetch_f4" in str(e)


@pytest.mark.parametrize("change,words", [
    ({"format": 0x7}, "format"), ({"channels": 3}, "channels"), ({"kind": 0}, "resource"),
    ({"width": 0}, "linear"), ({"width": (1 << 27) + 1}, "linear"), ({"pitch": 16}, "pitch"),
    ({"flags": 0x80}, "flags"), ({"modes": 4}, "modes"), ({"addr": 2}, "aligned"),
    ({"addr": (1 << 40) - 8}, "address space"), ({"format": T.TEX_FORMAT_S32, "flags": 2},
                                                 "normalised"),
    ({"format": T.TEX_FORMAT_U8, "flags": 4}, "filtering")])
def test_descriptor_validation(change, words):
    desc = T.tex_desc(T.TEX_RESOURCE_LINEAR, 1 << 32, T.TEX_FORMAT_FLOAT, 4, 16)
    with pytest.raises(GdevError) as info:
        validate(desc._replace(**change))
    assert info.value.errno == errno.EINVAL and words in str(info.value)


@pytest.mark.parametrize("change,words", [
    ({"height": 1 << 17}, "pitch2D"), ({"width": 1 << 18}, "pitch2D"),
    ({"pitch": (1 << 21) + 64}, "pitch"), ({"pitch": 60}, "pitch"), ({"pitch": 66}, "pitch")])
def test_pitch2d_validation(change, words):
    desc = T.tex_desc(T.TEX_RESOURCE_PITCH2D, 1 << 32, T.TEX_FORMAT_FLOAT, 1, 16, 8, 64)
    validate(desc)
    with pytest.raises(GdevError) as info:
        validate(desc._replace(**change))
    assert info.value.errno == errno.EINVAL and words in str(info.value)


def test_table_limit_and_destroy():
    table = TextureTable(limit=3)
    tex = validate(T.tex_desc(T.TEX_RESOURCE_LINEAR, 1 << 32, T.TEX_FORMAT_FLOAT, 1, 4))
    hs = {table.create(tex) for _ in range(3)}
    assert len(hs) == 3 and 0 not in hs
    with pytest.raises(GdevError) as info:
        table.create(tex)
    assert info.value.errno == errno.ENOSPC
    table.destroy(hs.pop())
    with pytest.raises(GdevError):
        table.destroy(12345)
    table.create(tex)


def test_the_compiled_engine_translates_tex(mod, engine):
    """Under the jit policy a texture kernel runs compiled (the engine's own sampler, held
    to the interpreter's results by every test above), not on the fallback."""
    dev, table = Device(), TextureTable()
    data = np.arange(16, dtype=np.float32).reshape(1, 4, 4)
    h = _texture(dev, table, data, False, Ref(data))
    idx, out = dev.put(np.arange(4, dtype=np.int32)), dev.alloc(64)
    launch = dev.launch(mod, "fetch_f4", 1, 4, h, idx, out, 4, textures=table)
    assert launch.engine == ("jit" if engine == "jit" else "interp")
    np.testing.assert_array_equal(dev.get(out, 16, np.float32), data.ravel())


@pytest.mark.parametrize("case", range(6))
def test_engines_agree_bit_for_bit(mod, case):
    """Random textures and coordinates (NaN, infinities, huge values among them) sampled by
    the interpreter and by the compiled engine: the same bits in every result word."""
    from gdevd.gpu.ptx import jit
    rng = np.random.default_rng(100 + case)
    dtype = ["f4", "f2", "u1", "i1", "u2", "i2"][case]
    dt = np.dtype(dtype)
    shape = (int(rng.integers(1, 6)), int(rng.integers(1, 9)), [1, 2, 4][case % 3])
    data = (rng.uniform(-50, 50, shape).astype(dt) if dt.kind == "f" else
            rng.integers(np.iinfo(dt).min, np.iinfo(dt).max, shape, dtype=dt, endpoint=True))
    n = 300
    xs = rng.uniform(-12, 12, n).astype(np.float32)
    ys = rng.uniform(-12, 12, n).astype(np.float32)
    xs[:6] = [np.nan, np.inf, -np.inf, 3e38, -3e38, 1e-30]
    ys[6:12] = [np.nan, np.inf, -np.inf, 3e38, -3e38, 0.0]
    got = {}
    for mode, normalized, linear in itertools.product(MODES, (False, True), (False, True)):
        ref = Ref(data, mode, normalized, linear and (dt.kind == "f" or dt.itemsize < 4),
                  read_norm=dt.kind != "f")
        for eng in ("interp", "jit"):
            old = jit.engine()
            jit.set_engine(eng)
            try:
                dev, table = Device(), TextureTable()
                h = _texture(dev, table, data, True, ref, pad=8)
                got[eng] = _run(mod, "tex2d_u4", h, [xs, ys], table, dev, np.uint32)
            finally:
                jit.set_engine(old)
        np.testing.assert_array_equal(got["interp"], got["jit"], err_msg=f"{mode} "
                                      f"{normalized} {linear}")
