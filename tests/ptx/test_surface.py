"""Surface loads and stores (``suld.b``/``sust.b``, data/surface.cu) in each boundary mode,
against a model of the PTX ISA's rules: byte x coordinates, .trap faults, .clamp moves the
access to the nearest place in range, .zero reads zeros and drops stores.  Both engines."""

from __future__ import annotations

import errno

import numpy as np
import pytest

from gdevd.errors import KernelFault
from gdevd.gpu.texture import TextureTable
from gdevd.runtime.texdesc import validate
from libgdev import texture as T

from .helpers import Device, load

W, H = 5, 3


@pytest.fixture(scope="module")
def mod():
    return load("surface")


def _surface(dev, table, data: np.ndarray, fmt=T.TEX_FORMAT_FLOAT, channels=1, pad=12):
    h, w = data.shape[:2]
    row = data[0].nbytes
    img = np.zeros((h, row + pad), np.uint8)
    img[:, :row] = data.reshape(h, -1).view(np.uint8)
    va = dev.put(img)
    return va, row + pad, table.create(validate(T.tex_desc(
        T.TEX_RESOURCE_PITCH2D, va, fmt, channels, w, h, row + pad, surface=True)))


def _rw(mod, kernel, xs, ys):
    dev, table = Device(), TextureTable()
    data = np.arange(W * H, dtype=np.float32).reshape(H, W) + 100
    va, pitch, s = _surface(dev, table, data)
    n = len(xs)
    dx, dy = dev.put(np.array(xs, np.int32)), dev.put(np.array(ys, np.int32))
    out = dev.alloc(4 * n)
    dev.launch(mod, kernel, 1, 32, s, dx, dy, out, n, textures=table)
    after = dev.get(va, H * pitch // 4, np.float32).reshape(H, pitch // 4)[:, :W]
    return data, dev.get(out, n, np.float32), after


def test_in_range_reads_and_writes(mod):
    xs, ys = [0, 4, 16, 8], [0, 1, 2, 0]
    data, got, after = _rw(mod, "rw_trap", xs, ys)
    np.testing.assert_array_equal(got, [data[y, x // 4] for x, y in zip(xs, ys, strict=True)])
    want = data.copy()
    for k, (x, y) in enumerate(zip(xs, ys, strict=True)):
        want[y, x // 4] = k + 0.5
    np.testing.assert_array_equal(after, want)


def test_zero_reads_zeros_and_drops_stores(mod):
    xs, ys = [-4, 20, 4, 0], [0, 0, 3, 1]
    data, got, after = _rw(mod, "rw_zero", xs, ys)
    np.testing.assert_array_equal(got, [0, 0, 0, data[1, 0]])
    want = data.copy()
    want[1, 0] = 3.5
    np.testing.assert_array_equal(after, want)


def test_clamp_moves_to_the_nearest_place(mod):
    xs, ys = [-40, 400, 8, 4], [1, 9, -2, 2]
    data, got, after = _rw(mod, "rw_clamp", xs, ys)
    near = [(1, 0), (2, 4), (0, 2), (2, 1)]
    np.testing.assert_array_equal(got, [data[y, x] for y, x in near])
    want = data.copy()
    for k, (y, x) in enumerate(near):
        want[y, x] = k + 0.5
    np.testing.assert_array_equal(after, want)


def test_trap_and_bad_handles_fault(mod):
    with pytest.raises(KernelFault) as info:
        _rw(mod, "rw_trap", [0, 20], [0, 0])
    assert info.value.errno == errno.EFAULT
    assert "out-of-bounds surface access in rw_trap at line" in str(info.value)
    with pytest.raises(KernelFault) as info:
        _rw(mod, "rw_trap", [2], [0])                      # x not a multiple of 4 bytes
    assert "misaligned" in str(info.value)
    dev, table = Device(), TextureTable()
    tex = table.create(validate(T.tex_desc(T.TEX_RESOURCE_LINEAR, dev.put(np.zeros(4)),
                                           T.TEX_FORMAT_FLOAT, 1, 4)))
    for bad in (tex, tex ^ 5):          # a texture object is no surface; a forged handle
        with pytest.raises(KernelFault) as info:
            dev.launch(mod, "write1d", 1, 4, bad, 4, textures=table)
        assert "invalid surface object in write1d at line" in str(info.value)


def test_vector_bytes_and_1d(mod):
    dev, table = Device(), TextureTable()
    rng = np.random.default_rng(2)
    img = rng.integers(0, 256, (H, W, 4), dtype=np.uint8)
    va, pitch, s = _surface(dev, table, img, T.TEX_FORMAT_U8, 4, pad=4)
    dev.launch(mod, "invert4", (1, H), 32, s, W, H, textures=table)
    got = dev.get(va, H * pitch, np.uint8).reshape(H, pitch)[:, :W * 4].reshape(H, W, 4)
    want = img.copy()
    want[..., :3] = 255 - img[..., :3]
    np.testing.assert_array_equal(got, want)
    line = dev.put(np.zeros(8, np.int32))
    s1 = table.create(validate(T.tex_desc(T.TEX_RESOURCE_PITCH2D, line, T.TEX_FORMAT_S32, 1,
                                          8, 1, 32, surface=True)))
    dev.launch(mod, "write1d", 1, 8, s1, 8, textures=table)
    np.testing.assert_array_equal(dev.get(line, 8, np.int32), np.arange(8) * 3)


def test_a_surface_is_no_texture():
    table = TextureTable()
    s = table.create(validate(T.tex_desc(T.TEX_RESOURCE_PITCH2D, 1 << 32, T.TEX_FORMAT_FLOAT,
                                         1, 4, 2, 16, surface=True)))
    with pytest.raises(Exception, match="invalid texture object"):
        table.get(s)
    with pytest.raises(Exception, match="sampling flags"):
        validate(T.tex_desc(T.TEX_RESOURCE_PITCH2D, 1 << 32, T.TEX_FORMAT_FLOAT, 1, 4, 2, 16,
                            surface=True, linear=True))
