"""Texture objects through the CUDA driver API, in every binding (kcuda, libgdev.cuda over a
mounted gdevd, in-process), and what a hostile context can do with them: nothing to others."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from libgdev import cuda as C
from libgdev.cuda import CudaError, CUresult

from .conftest import BINDINGS

PTX_DIR = Path(__file__).resolve().parents[1] / "ptx" / "data"
PTX = (PTX_DIR / "texture.ptx").read_bytes()


@pytest.fixture(params=BINDINGS)
def any_driver(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue(request.param)


def _image(drv, h: int = 5, w: int = 7, pad: int = 64):
    """A (h, w) float32 image in rows ``pitch`` bytes apart; (data, devptr, pitch)."""
    data = np.arange(h * w, dtype=np.float32).reshape(h, w) * 0.5 - 3
    pitch = w * 4 + pad
    rows = np.zeros((h, pitch // 4), np.float32)
    rows[:, :w] = data
    d = drv.cuMemAlloc(rows.nbytes)
    drv.cuMemcpyHtoD(d, rows)
    return data, d, pitch


def _tex2d(drv, fn, obj: int, xs, ys) -> np.ndarray:
    n = len(xs)
    dx, dy, out = drv.cuMemAlloc(4 * n), drv.cuMemAlloc(4 * n), drv.cuMemAlloc(16 * n)
    drv.cuMemcpyHtoD(dx, np.asarray(xs, np.float32))
    drv.cuMemcpyHtoD(dy, np.asarray(ys, np.float32))
    drv.cuLaunchKernel(fn, 1, 1, 1, 64, 1, 1, 0, None, [obj, dx, dy, out, n])
    got = np.empty((n, 4), np.float32)
    drv.cuMemcpyDtoH(got, out)
    for d in (dx, dy, out):
        drv.cuMemFree(d)
    return got


def _descs(d: int, pitch: int, h: int = 5, w: int = 7, linear: bool = False):
    res = C.CUDA_RESOURCE_DESC(C.CU_RESOURCE_TYPE_PITCH2D, devPtr=d,
                               format=C.CU_AD_FORMAT_FLOAT, numChannels=1, width=w, height=h,
                               pitchInBytes=pitch)
    tex = C.CUDA_TEXTURE_DESC(addressMode=(C.CU_TR_ADDRESS_MODE_CLAMP,) * 3,
                              filterMode=C.CU_TR_FILTER_MODE_LINEAR if linear else 0)
    return res, tex


def test_tex2d_point_and_linear(any_driver) -> None:
    drv = any_driver
    ctx = drv.cuCtxCreate(0, drv.cuDeviceGet(0))
    try:
        fn = drv.cuModuleGetFunction(drv.cuModuleLoadData(PTX), "tex2d_f4")
        data, d, pitch = _image(drv)
        point = drv.cuTexObjectCreate(*_descs(d, pitch))
        linear = drv.cuTexObjectCreate(*_descs(d, pitch, linear=True))
        assert point != linear and point and linear
        got = _tex2d(drv, fn, point, [0.5, 6.9, -4.0, 3.2], [0.5, 4.99, 2.5, 9.0])
        np.testing.assert_array_equal(got[:, 0], [data[0, 0], data[4, 6], data[2, 0],
                                                  data[4, 3]])
        np.testing.assert_array_equal(got[:, 1:], [[0, 0, 1]] * 4)
        got = _tex2d(drv, fn, linear, [1.0, 2.5], [0.5, 1.0])
        np.testing.assert_allclose(got[:, 0], [(data[0, 0] + data[0, 1]) / 2,
                                               (data[0, 2] + data[1, 2]) / 2])
        res = drv.cuTexObjectGetResourceDesc(linear)
        assert (res.devPtr, res.width, res.height, res.pitchInBytes) == (d, 7, 5, pitch)
        assert drv.cuTexObjectGetTextureDesc(linear).filterMode == C.CU_TR_FILTER_MODE_LINEAR
        drv.cuTexObjectDestroy(point)
        drv.cuTexObjectDestroy(linear)
        with pytest.raises(CudaError) as info:
            drv.cuTexObjectDestroy(point)
        assert info.value.result == CUresult.CUDA_ERROR_INVALID_VALUE
        drv.cuMemFree(d)
    finally:
        drv.cuCtxDestroy(ctx)


def test_bad_descriptors_are_invalid_values(drv, ctx) -> None:
    data, d, pitch = _image(drv)
    res, tex = _descs(d, pitch)
    for bad in (dict(height=1 << 20), dict(width=1 << 20), dict(pitchInBytes=1 << 30),
                dict(pitchInBytes=8), dict(devPtr=d + 4096 * 16), dict(numChannels=3),
                dict(format=0x55)):
        with pytest.raises(CudaError) as info:
            drv.cuTexObjectCreate(C.CUDA_RESOURCE_DESC(**{**vars(res), **bad}), tex)
        assert info.value.result == CUresult.CUDA_ERROR_INVALID_VALUE, bad
    # linear filtering of integers read as integers: CUDA refuses it
    ires = C.CUDA_RESOURCE_DESC(**{**vars(res), "format": C.CU_AD_FORMAT_UNSIGNED_INT8})
    with pytest.raises(CudaError):
        drv.cuTexObjectCreate(ires, C.CUDA_TEXTURE_DESC(filterMode=1,
                                                        flags=C.CU_TRSF_READ_AS_INTEGER))
    with pytest.raises(CudaError) as info:
        drv.cuTexObjectCreate(C.CUDA_RESOURCE_DESC(C.CU_RESOURCE_TYPE_ARRAY), tex)
    assert info.value.result == CUresult.CUDA_ERROR_INVALID_HANDLE      # no array
    with pytest.raises(CudaError) as info:
        drv.cuTexObjectCreate(C.CUDA_RESOURCE_DESC(C.CU_RESOURCE_TYPE_MIPMAPPED_ARRAY), tex)
    assert info.value.result == CUresult.CUDA_ERROR_NOT_SUPPORTED
    drv.cuMemFree(d)


def _fault(drv, fn, obj) -> CudaError:
    with pytest.raises(CudaError) as info:   # the last row: past what _tex2d allocates
        _tex2d(drv, fn, obj, [60.5], [60.5])
        drv.cuCtxSynchronize()
    return info.value


def test_foreign_stale_and_freed_textures_fault_only_their_context(any_driver) -> None:
    """Context B presents A's handle, a destroyed one, one over freed memory: each faults B
    (illegal address, naming the kernel and line), and A keeps sampling its texture (through
    a mounted daemon too, which survives)."""
    drv = any_driver
    dev = drv.cuDeviceGet(0)
    a = drv.cuCtxCreate(0, dev)
    fa = drv.cuModuleGetFunction(drv.cuModuleLoadData(PTX), "tex2d_f4")
    data, da, pitch = _image(drv)
    ta = drv.cuTexObjectCreate(*_descs(da, pitch))
    cases = {"foreign": lambda drv: ta, "forged": lambda drv: ta ^ 0x40,
             "destroyed": _destroyed, "freed": _freed}
    for name, make in cases.items():
        b = drv.cuCtxCreate(0, dev)
        fb = drv.cuModuleGetFunction(drv.cuModuleLoadData(PTX), "tex2d_f4")
        err = _fault(drv, fb, make(drv))
        assert err.result == CUresult.CUDA_ERROR_ILLEGAL_ADDRESS, name
        assert "tex2d_f4 at line" in str(err), name
        drv.cuCtxDestroy(b)
        drv.cuCtxSetCurrent(a)
        got = _tex2d(drv, fa, ta, [1.5], [2.5])
        assert got[0, 0] == data[2, 1], name
    drv.cuCtxDestroy(a)


def _destroyed(drv) -> int:
    _, d, pitch = _image(drv)
    t = drv.cuTexObjectCreate(*_descs(d, pitch))
    drv.cuTexObjectDestroy(t)
    return t


def _freed(drv) -> int:
    _, d, pitch = _image(drv, h=64, w=64)      # 20 KiB: the first page goes when freed
    t = drv.cuTexObjectCreate(*_descs(d, pitch, h=64, w=64))
    drv.cuMemFree(d)
    return t


def test_arrays_and_textures_over_them(any_driver) -> None:
    """cuArrayCreate + cuMemcpy2D in and out (host, device and array sides), a texture over
    the array sampled by tex2D; a 1D array's texture by tex1D."""
    drv = any_driver
    ctx = drv.cuCtxCreate(0, drv.cuDeviceGet(0))
    try:
        mod = drv.cuModuleLoadData(PTX)
        img = (np.arange(6 * 9, dtype=np.float32).reshape(6, 9) - 20) / 4
        arr = drv.cuArrayCreate(C.CUDA_ARRAY_DESCRIPTOR(9, 6, C.CU_AD_FORMAT_FLOAT, 1))
        host = np.zeros((6, 16), np.float32)          # rows 64 bytes apart on the host
        host[:, :9] = img
        drv.cuMemcpy2D(C.CUDA_MEMCPY2D(srcMemoryType=C.CU_MEMORYTYPE_HOST, srcHost=host,
                                       srcPitch=64, dstMemoryType=C.CU_MEMORYTYPE_ARRAY,
                                       dstArray=arr, WidthInBytes=36, Height=6))
        back = np.zeros((6, 9), np.float32)
        drv.cuMemcpy2D(C.CUDA_MEMCPY2D(srcMemoryType=C.CU_MEMORYTYPE_ARRAY, srcArray=arr,
                                       srcXInBytes=4, srcY=1, dstMemoryType=1, dstHost=back,
                                       dstPitch=36, WidthInBytes=32, Height=5))
        np.testing.assert_array_equal(back[:5, :8], img[1:, 1:])
        assert drv.cuArrayGetDescriptor(arr).Width == 9
        tex = C.CUDA_TEXTURE_DESC(addressMode=(C.CU_TR_ADDRESS_MODE_BORDER,) * 3,
                                  borderColor=(9.0, 0, 0, 0))
        obj = drv.cuTexObjectCreate(C.CUDA_RESOURCE_DESC(C.CU_RESOURCE_TYPE_ARRAY, hArray=arr),
                                    tex)
        fn = drv.cuModuleGetFunction(mod, "tex2d_f4")
        got = _tex2d(drv, fn, obj, [0.5, 8.5, 3.5, 9.5], [0.5, 5.5, 2.7, 1.0])
        np.testing.assert_array_equal(got[:, 0], [img[0, 0], img[5, 8], img[2, 3], 9.0])
        line = drv.cuArrayCreate(C.CUDA_ARRAY_DESCRIPTOR(5, 0, C.CU_AD_FORMAT_FLOAT, 2))
        drv.cuMemcpyHtoA(line, 0, np.arange(10, dtype=np.float32), 40)
        out = np.zeros(10, np.float32)
        drv.cuMemcpyAtoH(out, line, 0, 40)
        assert list(out) == list(range(10))
        obj1 = drv.cuTexObjectCreate(C.CUDA_RESOURCE_DESC(C.CU_RESOURCE_TYPE_ARRAY,
                                                          hArray=line),
                                     C.CUDA_TEXTURE_DESC(filterMode=1))
        n = 3
        dx, dout = drv.cuMemAlloc(4 * n), drv.cuMemAlloc(16 * n)
        drv.cuMemcpyHtoD(dx, np.array([0.5, 1.0, 7.0], np.float32))
        drv.cuLaunchKernel(drv.cuModuleGetFunction(mod, "tex1d_f4"), 1, 1, 1, 32, 1, 1, 0,
                           None, [obj1, dx, dout, n])
        got = np.zeros((n, 4), np.float32)
        drv.cuMemcpyDtoH(got, dout)
        np.testing.assert_array_equal(got[:, :2], [[0, 1], [1, 2], [8, 9]])
        with pytest.raises(CudaError) as info:
            drv.cuMemcpyHtoA(line, 8, np.zeros(10, np.float32), 40)
        assert info.value.result == CUresult.CUDA_ERROR_INVALID_VALUE
        for a in (arr, line):
            drv.cuArrayDestroy(a)
        with pytest.raises(CudaError):
            drv.cuArrayDestroy(arr)
    finally:
        drv.cuCtxDestroy(ctx)


def test_surface_objects_over_arrays(any_driver) -> None:
    """cuSurfObjectCreate over an array: a kernel inverts its uchar4 texels in place."""
    drv = any_driver
    ctx = drv.cuCtxCreate(0, drv.cuDeviceGet(0))
    try:
        mod = drv.cuModuleLoadData((PTX_DIR / "surface.ptx").read_bytes())
        img = np.arange(3 * 5 * 4, dtype=np.uint8).reshape(3, 5, 4) * 3
        arr = drv.cuArrayCreate(C.CUDA_ARRAY_DESCRIPTOR(5, 3, C.CU_AD_FORMAT_UNSIGNED_INT8, 4))
        drv.cuMemcpyHtoA(arr, 0, img, img.nbytes)
        with pytest.raises(CudaError) as info:
            drv.cuSurfObjectCreate(C.CUDA_RESOURCE_DESC(C.CU_RESOURCE_TYPE_LINEAR))
        assert info.value.result == CUresult.CUDA_ERROR_INVALID_VALUE
        surf = drv.cuSurfObjectCreate(C.CUDA_RESOURCE_DESC(C.CU_RESOURCE_TYPE_ARRAY,
                                                           hArray=arr))
        assert drv.cuSurfObjectGetResourceDesc(surf).hArray is arr
        drv.cuLaunchKernel(drv.cuModuleGetFunction(mod, "invert4"), 1, 3, 1, 32, 1, 1, 0,
                           None, [surf, 5, 3])
        got = np.zeros_like(img)
        drv.cuMemcpyAtoH(got, arr, 0, img.nbytes)
        want = img.copy()
        want[..., :3] = 255 - img[..., :3]
        np.testing.assert_array_equal(got, want)
        drv.cuSurfObjectDestroy(surf)
        drv.cuArrayDestroy(arr)
    finally:
        drv.cuCtxDestroy(ctx)
