"""CUDA arrays with slices through the driver API, in every binding (kcuda, libgdev.cuda over
a mounted gdevd, in-process): cuArray3DCreate of 3D, layered and cubemap arrays, cuMemcpy3D
boxes in and out, texture and surface objects over them sampled by tex.3d, tex.a2d and
tex.cube kernels (tests/ptx/data/tex3d.ptx) against the reference of tests/ptx/test_tex3d.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from libgdev import cuda as C
from libgdev.cuda import CudaError, CUresult
from tests.ptx.test_tex3d import Ref, cube_ref

from .conftest import BINDINGS

PTX = (Path(__file__).resolve().parents[1] / "ptx" / "data" / "tex3d.ptx").read_bytes()
FLOAT = C.CU_AD_FORMAT_FLOAT


@pytest.fixture(params=BINDINGS)
def any_driver(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue(request.param)


def _to_array(drv, arr, data: np.ndarray) -> None:
    """cuMemcpy3D of host ``data`` (slices, rows, width) into the whole of ``arr``."""
    d, h, w = data.shape[:3]
    row = data[0, 0].nbytes
    drv.cuMemcpy3D(C.CUDA_MEMCPY3D(srcMemoryType=C.CU_MEMORYTYPE_HOST, srcHost=data,
                                   srcPitch=row, srcHeight=h,
                                   dstMemoryType=C.CU_MEMORYTYPE_ARRAY, dstArray=arr,
                                   WidthInBytes=row, Height=h, Depth=d))


def _sample(drv, fn, obj, args: list[np.ndarray]) -> np.ndarray:
    n = args[0].size
    ptrs = [drv.cuMemAlloc(a.nbytes) for a in args]
    for p, a in zip(ptrs, args, strict=True):
        drv.cuMemcpyHtoD(p, a)
    out = drv.cuMemAlloc(16 * n)
    drv.cuLaunchKernel(fn, (n + 63) // 64, 1, 1, 64, 1, 1, 0, None, [obj, *ptrs, out, n])
    got = np.empty((n, 4), np.float32)
    drv.cuMemcpyDtoH(got, out)
    return got


def test_3d_and_layered_arrays(any_driver) -> None:
    drv = any_driver
    ctx = drv.cuCtxCreate(0, drv.cuDeviceGet(0))
    try:
        mod = drv.cuModuleLoadData(PTX)
        rng = np.random.default_rng(8)
        vol = rng.uniform(-4, 4, (3, 4, 5)).astype(np.float32)
        arr = drv.cuArray3DCreate(C.CUDA_ARRAY3D_DESCRIPTOR(5, 4, 3, FLOAT, 1))
        d = drv.cuArray3DGetDescriptor(arr)
        assert (d.Width, d.Height, d.Depth, d.Flags) == (5, 4, 3, 0)
        _to_array(drv, arr, vol)
        box = np.zeros((2, 2, 3), np.float32)      # slices 1..2, rows 2..3, columns 1..3
        drv.cuMemcpy3D(C.CUDA_MEMCPY3D(srcMemoryType=C.CU_MEMORYTYPE_ARRAY, srcArray=arr,
                                       srcXInBytes=4, srcY=2, srcZ=1,
                                       dstMemoryType=C.CU_MEMORYTYPE_HOST, dstHost=box,
                                       dstPitch=12, dstHeight=2, WidthInBytes=12, Height=2,
                                       Depth=2))
        np.testing.assert_array_equal(box, vol[1:3, 2:4, 1:4])
        with pytest.raises(CudaError) as info:      # one slice past the last
            drv.cuMemcpy3D(C.CUDA_MEMCPY3D(srcMemoryType=C.CU_MEMORYTYPE_ARRAY, srcArray=arr,
                                           srcZ=2, dstMemoryType=C.CU_MEMORYTYPE_HOST,
                                           dstHost=box, dstPitch=12, dstHeight=2,
                                           WidthInBytes=12, Height=2, Depth=2))
        assert info.value.result == CUresult.CUDA_ERROR_INVALID_VALUE
        tex = C.CUDA_TEXTURE_DESC(addressMode=(C.CU_TR_ADDRESS_MODE_WRAP,) * 3, filterMode=1,
                                  flags=C.CU_TRSF_NORMALIZED_COORDINATES)
        obj = drv.cuTexObjectCreate(C.CUDA_RESOURCE_DESC(C.CU_RESOURCE_TYPE_ARRAY,
                                                         hArray=arr), tex)
        xs, ys, zs = (rng.uniform(-1, 2, 50).astype(np.float32) for _ in range(3))
        got = _sample(drv, drv.cuModuleGetFunction(mod, "tex3d_f4"), obj, [xs, ys, zs])
        ref = Ref(vol[..., None], ("wrap",) * 3, normalized=True, linear=True)
        want = [ref.sample(ref.scaled([xs[k], ys[k], zs[k]]))[0] for k in range(50)]
        np.testing.assert_allclose(got[:, 0], want, rtol=1e-5, atol=1e-5)
        layers = drv.cuArray3DCreate(C.CUDA_ARRAY3D_DESCRIPTOR(
            5, 4, 3, FLOAT, 1, C.CUDA_ARRAY3D_LAYERED | C.CUDA_ARRAY3D_SURFACE_LDST))
        _to_array(drv, layers, vol)
        obj2 = drv.cuTexObjectCreate(C.CUDA_RESOURCE_DESC(C.CU_RESOURCE_TYPE_ARRAY,
                                                          hArray=layers),
                                     C.CUDA_TEXTURE_DESC(filterMode=0))
        ls = np.array([0, 1, 2, 5, -1], np.int32)
        got = _sample(drv, drv.cuModuleGetFunction(mod, "tex2dl_f4"), obj2,
                      [np.full(5, 3.5, np.float32), np.full(5, 1.5, np.float32), ls])
        np.testing.assert_array_equal(got[:, 0], vol[[0, 1, 2, 2, 0], 1, 3])
        surf = drv.cuSurfObjectCreate(C.CUDA_RESOURCE_DESC(C.CU_RESOURCE_TYPE_ARRAY,
                                                           hArray=layers))
        drv.cuLaunchKernel(drv.cuModuleGetFunction(mod, "surf2dl_add"), 1, 1, 1, 64, 1, 1, 0,
                           None, [surf, 5, 4, 3])
        back = np.zeros_like(vol)
        drv.cuMemcpyAtoH(back, layers, 0, back.nbytes)
        np.testing.assert_array_equal(back, 2 * vol + 1)
        for o in (obj, obj2):
            drv.cuTexObjectDestroy(o)
        drv.cuSurfObjectDestroy(surf)
        drv.cuArrayDestroy(arr)
        drv.cuArrayDestroy(layers)
    finally:
        drv.cuCtxDestroy(ctx)


def test_cubemaps_and_refusals(any_driver) -> None:
    drv = any_driver
    ctx = drv.cuCtxCreate(0, drv.cuDeviceGet(0))
    try:
        mod = drv.cuModuleLoadData(PTX)
        faces = np.arange(6 * 3 * 3, dtype=np.float32).reshape(6, 3, 3)
        cube = drv.cuArray3DCreate(C.CUDA_ARRAY3D_DESCRIPTOR(3, 3, 6, FLOAT, 1,
                                                             C.CUDA_ARRAY3D_CUBEMAP))
        _to_array(drv, cube, faces)
        obj = drv.cuTexObjectCreate(C.CUDA_RESOURCE_DESC(C.CU_RESOURCE_TYPE_ARRAY,
                                                         hArray=cube), C.CUDA_TEXTURE_DESC())
        dirs = np.array([(1, 0.2, -0.3), (-1, 0.9, 0.9), (0.1, 2, 0), (0, -1, 0.5),
                         (0.3, 0.3, 1), (-0.6, 0, -1)], np.float32)
        got = _sample(drv, drv.cuModuleGetFunction(mod, "cube_f4"), obj, list(dirs.T.copy()))
        ref = Ref(faces[..., None])
        for (x, y, z), g in zip(dirs, got[:, 0], strict=True):
            face, s, t = cube_ref(x, y, z)
            assert g == ref.sample([s * np.float32(3), t * np.float32(3)], face, True)[0]
        for bad, result in [
                (C.CUDA_ARRAY3D_DESCRIPTOR(3, 4, 6, FLOAT, 1, C.CUDA_ARRAY3D_CUBEMAP),
                 CUresult.CUDA_ERROR_INVALID_VALUE),
                (C.CUDA_ARRAY3D_DESCRIPTOR(3, 3, 7, FLOAT, 1,
                                           C.CUDA_ARRAY3D_CUBEMAP | C.CUDA_ARRAY3D_LAYERED),
                 CUresult.CUDA_ERROR_INVALID_VALUE),
                (C.CUDA_ARRAY3D_DESCRIPTOR(4, 4, 2049, FLOAT, 1, C.CUDA_ARRAY3D_LAYERED),
                 CUresult.CUDA_ERROR_INVALID_VALUE),
                (C.CUDA_ARRAY3D_DESCRIPTOR(4, 0, 3, FLOAT, 1), CUresult.CUDA_ERROR_INVALID_VALUE),
                (C.CUDA_ARRAY3D_DESCRIPTOR(4, 4, 1, FLOAT, 1, 0x08),      # texture gather
                 CUresult.CUDA_ERROR_NOT_SUPPORTED)]:
            with pytest.raises(CudaError) as info:
                drv.cuArray3DCreate(bad)
            assert info.value.result == result, bad
        drv.cuTexObjectDestroy(obj)
        drv.cuArrayDestroy(cube)
    finally:
        drv.cuCtxDestroy(ctx)
