"""Surface forms beyond test_surface.py's 2D ones (data/surface_forms.cu): 3D, 1D layered and
cubemap surfaces, 16- and 64-bit elements, vectors, and the order in which one instruction's
lanes fault: every lane's place is checked before any element moves (the fault of the surface
with the lowest handle first, out of range before misaligned), then elements move lane by
lane until one faults in the page table.  conftest runs each test on both engines (under
``jit`` a launch runs the compiled kernel, and the compiling engine translates every one of
these: checked below), so every expected value is also a differential check."""

from __future__ import annotations

import numpy as np
import pytest

from gdevd.errors import KernelFault
from gdevd.gpu.ptx import load_module
from gdevd.gpu.texture import TextureTable
from gdevd.runtime.texdesc import validate
from libgdev import texture as T

from .helpers import Device, load


@pytest.fixture(scope="module")
def mod():
    return load("surface_forms")


def _surface(table, va, fmt, channels, w, h=1, pitch=0, **kw) -> int:
    return table.create(validate(T.tex_desc(T.TEX_RESOURCE_PITCH2D, va, fmt, channels, w, h,
                                            pitch, surface=True, **kw)))


@pytest.mark.parametrize("engine", ["jit"], indirect=True)
def test_the_compiling_engine_translates_every_surface_kernel(mod):
    mod.start_compile(wait=True)
    assert mod.jit.compiled.rejected == {}
    assert set(mod.jit.compiled.kernels) == set(mod.kernels)


def test_3d_vectors_of_two_floats(mod):
    dev, table = Device(), TextureTable()
    w, h, d, pitch = 5, 3, 4, 48                 # 40 bytes of texels, 8 of padding per row
    src = np.random.default_rng(1).standard_normal((d, h, pitch // 4)).astype(np.float32)
    a, b = dev.put(src), dev.put(np.zeros_like(src))
    kw = {"shape": T.TEX_SHAPE_3D, "depth": d, "slice_pitch": h * pitch}
    sa = _surface(table, a, T.TEX_FORMAT_FLOAT, 2, w, h, pitch, **kw)
    sb = _surface(table, b, T.TEX_FORMAT_FLOAT, 2, w, h, pitch, **kw)
    dev.launch(mod, "scale3d", (h, d), 32, sa, sb, w, textures=table)
    got = dev.get(b, src.size, np.float32).reshape(src.shape)
    want = np.zeros_like(src)
    want[..., :2 * w] = src[..., :2 * w] * 2
    np.testing.assert_array_equal(got, want)


def test_1d_layers_of_16_bit_elements(mod):
    dev, table = Device(), TextureTable()
    w, layers, slice_pitch = 6, 3, 16
    va = dev.put(np.zeros(layers * slice_pitch // 2, np.int16))
    s = _surface(table, va, T.TEX_FORMAT_S16, 1, w, 1, w * 2, shape=T.TEX_SHAPE_LAYERED_1D,
                 depth=layers, slice_pitch=slice_pitch)
    out = dev.alloc(2 * w * layers)
    dev.launch(mod, "layers1d", layers, w, s, out, w, textures=table)
    x, lay = np.arange(w), np.arange(layers)[:, None]
    np.testing.assert_array_equal(dev.get(out, w * layers, np.int16).reshape(layers, w),
                                  lay * 100 + np.minimum(x + 1, w - 1))
    img = dev.get(va, layers * slice_pitch // 2, np.int16).reshape(layers, -1)
    np.testing.assert_array_equal(img[:, :w], lay * 100 + x)
    assert not img[:, w:].any()


def test_cubemap_faces(mod):
    dev, table = Device(), TextureTable()
    w, pitch = 4, 32
    va = dev.put(np.full(6 * w * pitch // 4, -1, np.int32))
    s = _surface(table, va, T.TEX_FORMAT_S32, 1, w, w, pitch, shape=T.TEX_SHAPE_CUBEMAP,
                 depth=6, slice_pitch=w * pitch)
    dev.launch(mod, "faces", 6, (w, w), s, w, textures=table)
    img = dev.get(va, 6 * w * pitch // 4, np.int32).reshape(6, w, pitch // 4)
    f, y, x = np.ogrid[:6, :w, :w]
    np.testing.assert_array_equal(img[..., :w], f * 1000 + y * 10 + x)
    assert (img[..., w:] == -1).all()


def test_64_bit_elements_under_zero(mod):
    dev, table = Device(), TextureTable()
    w, h, pitch = 4, 2, 32                       # int2 texels: 8 bytes, the access's size
    data = np.arange(h * pitch // 8, dtype=np.int64).reshape(h, -1) * 11 + 5
    va = dev.put(data)
    s = _surface(table, va, T.TEX_FORMAT_S32, 2, w, h, pitch)
    xs, ys = [0, 8, 24, 32, -8, 16], [0, 1, 1, 0, 0, 2]
    inside = [x >= 0 and x + 8 <= 8 * w and 0 <= y < h for x, y in zip(xs, ys, strict=True)]
    out = dev.alloc(8 * len(xs))
    dev.launch(mod, "wide_zero", 1, 32, s, dev.put(np.array(xs, np.int32)),
               dev.put(np.array(ys, np.int32)), out, len(xs), textures=table)
    want = [data[y, x // 8] if ok else 0 for x, y, ok in zip(xs, ys, inside, strict=True)]
    np.testing.assert_array_equal(dev.get(out, len(xs), np.int64), want)
    after = data.copy()
    for k, (x, y, ok) in enumerate(zip(xs, ys, inside, strict=True)):
        if ok:
            after[y, x // 8] = -k
    np.testing.assert_array_equal(dev.get(va, data.size, np.int64).reshape(data.shape), after)


def test_the_lowest_handle_faults_first(mod):
    """Lanes 0-15 store out of range on b, lanes 16-31 misaligned on a: the interpreter
    checks surfaces in the order of their handles, so the fault is b's only when b's handle
    is the lower one."""
    dev, table = Device(), TextureTable()
    mem = [dev.put(np.zeros(64, np.int32)) for _ in range(2)]
    s = [_surface(table, va, T.TEX_FORMAT_S32, 1, 64, 1, 256) for va in mem]
    x = dev.put(np.array([400] * 16 + [2] * 16, np.int32))
    for a, b in ((0, 1), (1, 0)):
        with pytest.raises(KernelFault) as info:
            dev.launch(mod, "pick", 1, 32, s[a], s[b], x, textures=table)
        if s[b] < s[a]:
            assert "out-of-bounds surface access in pick at line" in str(info.value)
        else:
            assert f"illegal address 0x{mem[a] + 2:x} (misaligned) in pick" in str(info.value)
        assert not dev.get(mem[a], 64, np.int32).any()      # no lane stored anything


def test_out_of_range_outranks_an_earlier_misaligned_lane(mod):
    dev, table = Device(), TextureTable()
    va = dev.put(np.zeros(64, np.int32))
    s = _surface(table, va, T.TEX_FORMAT_S32, 1, 64, 1, 256)
    x = dev.put(np.array([2, 400] + [0] * 30, np.int32))
    with pytest.raises(KernelFault, match="out-of-bounds surface access in pick at line"):
        dev.launch(mod, "pick", 1, 32, s, s, x, textures=table)


def test_elements_move_in_lane_order_until_a_page_faults(mod):
    """A surface of two rows whose second row lies past the end of mapped memory: lanes 0
    and 1 store into row 0, lane 2 faults on row 1, lane 3 (row 0 again) never stores."""
    dev, table = Device(), TextureTable()
    xs, ys = dev.put(np.array([0, 4, 8, 12], np.int32)), dev.put(np.array([0, 0, 1, 0],
                                                                           np.int32))
    pitch = 256
    va = dev.BASE + dev.size - pitch             # row 1 starts where the mapping ends
    s = _surface(table, va, T.TEX_FORMAT_U8, 4, 16, 2, pitch)
    with pytest.raises(KernelFault) as info:
        dev.launch(mod, "bytes4", 1, 32, s, xs, ys, 4, textures=table)
    assert f"illegal address 0x{va + pitch + 8:x} (unmapped) in bytes4" in str(info.value)
    row = dev.get(va, 16, np.uint8)
    np.testing.assert_array_equal(row, [0, 1, 2, 3, 1, 2, 3, 4] + [0] * 8)


GUARDED = """
.version 7.0
.target sm_75
.address_size 64
.visible .entry guarded(.param .u64 s, .param .u32 bad)
{
    .reg .pred %p<3>;
    .reg .b32 %r<7>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [s];
    ld.param.u32 %r5, [bad];
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 1;
    setp.eq.u32 %p1, %r2, 1;
    shl.b32 %r3, %r1, 2;
    setp.eq.u32 %p2, %r1, %r5;
    selp.b32 %r6, 4000, %r3, %p2;
    @%p1 sust.b.1d.b32.trap [%rd1, {%r3}], {%r1};
    @!%p1 suld.b.1d.b32.trap {%r4}, [%rd1, {%r6}];
    @!%p1 sust.b.1d.b32.trap [%rd1, {%r6}], {%r4};
    ret;
}
"""


def test_a_guard_leaves_its_lanes_out(engine):
    """Odd lanes store their number; even lanes copy their element onto itself, lane ``bad``
    from far out of range, which faults under .trap only if the lane is even (an odd lane's
    guard leaves it out of the copy)."""
    mod = load_module(GUARDED, "guarded")
    if engine == "jit":
        mod.start_compile(wait=True)
        assert mod.jit.engine_of("guarded") == "jit", mod.jit.compiled.rejected
    dev, table = Device(), TextureTable()
    va = dev.put(np.full(32, -1, np.int32))
    s = _surface(table, va, T.TEX_FORMAT_S32, 1, 32, 1, 128)
    dev.launch(mod, "guarded", 1, 32, s, 99, textures=table)
    want = np.where(np.arange(32) % 2, np.arange(32), -1)
    np.testing.assert_array_equal(dev.get(va, 32, np.int32), want)
    dev.launch(mod, "guarded", 1, 32, s, 5, textures=table)
    np.testing.assert_array_equal(dev.get(va, 32, np.int32), want)
    with pytest.raises(KernelFault, match="out-of-bounds surface access in guarded"):
        dev.launch(mod, "guarded", 1, 32, s, 4, textures=table)
