"""CUDA habits that carry over: .cu sources compile with nvcc (cached), an unknown kernel
name lists the module's kernels (demangled), a Python int for a float parameter is refused."""

from __future__ import annotations

import shutil

import pytest

from libgdev.cuda import CudaError
from libgdev.cuda import CUresult as R

from .conftest import KERNELS

NOOP_PTX = """.version 7.0
.target sm_75
.address_size 64
.visible .entry _Z4noopv()
{
    ret;
}
.visible .entry plain()
{
    ret;
}
"""
SCALE_CU = """extern "C" __global__ void scale(float *x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
"""
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")


def test_an_unknown_kernel_lists_the_modules_kernels_demangled(drv, ctx) -> None:
    mod = drv.cuModuleLoadData(NOOP_PTX)
    with pytest.raises(CudaError) as info:
        drv.cuModuleGetFunction(mod, "noop")
    assert info.value.result is R.CUDA_ERROR_NOT_FOUND
    msg = str(info.value)
    assert "its kernels: " in msg and "plain" in msg, msg
    if shutil.which("c++filt"):
        assert "_Z4noopv (noop())" in msg and "did you mean _Z4noopv?" in msg, msg


def test_a_python_int_for_a_float_parameter_is_refused(drv, ctx) -> None:
    mod = drv.cuModuleLoad(KERNELS / "nn.ptx")
    f = drv.cuModuleGetFunction(mod, "euclid")
    d = drv.cuMemAlloc(64)
    with pytest.raises(CudaError) as info:
        drv.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, None, [d, d, 1, 3, 2.5])
    assert info.value.result is R.CUDA_ERROR_INVALID_VALUE
    assert "argument 3 of euclid is .f32: got the int 3" in str(info.value), str(info.value)
    with pytest.raises(CudaError, match=r"argument 2 of euclid is .u32: got the float 1.0"):
        drv.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, None, [d, d, 1.0, 3.0, 2.5])
    drv.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, None, [d, d, 0, 3.0, 2.5])
    drv.cuCtxSynchronize()


@needs_nvcc
def test_a_cu_file_is_compiled_once_and_runs(drv, ctx, tmp_path, monkeypatch) -> None:
    import numpy as np

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    src = tmp_path / "scale.cu"
    src.write_text(SCALE_CU)
    f = drv.cuModuleGetFunction(drv.cuModuleLoad(src), "scale")
    cached = list((tmp_path / "cache" / "gdev" / "ptx").glob("*.ptx"))
    assert len(cached) == 1
    stamp = cached[0].stat().st_mtime_ns
    x = np.arange(64, dtype=np.float32)
    d = drv.cuMemAlloc(x.nbytes)
    drv.cuMemcpyHtoD(d, x)
    drv.cuLaunchKernel(f, 2, 1, 1, 32, 1, 1, 0, None, [d, 2.0, 64])
    y = np.empty_like(x)
    drv.cuMemcpyDtoH(y, d)
    assert np.array_equal(y, 2 * x)
    drv.cuModuleLoad(src)  # the second load takes the cached PTX
    assert list((tmp_path / "cache" / "gdev" / "ptx").glob("*.ptx")) == cached
    assert cached[0].stat().st_mtime_ns == stamp


@needs_nvcc
def test_a_cu_file_that_does_not_compile_shows_nvccs_errors(drv, ctx, tmp_path,
                                                            monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    src = tmp_path / "broken.cu"
    src.write_text('extern "C" __global__ void k() { undeclared_thing(); }\n')
    with pytest.raises(CudaError) as info:
        drv.cuModuleLoad(src)
    assert info.value.result is R.CUDA_ERROR_INVALID_SOURCE
    assert "undeclared_thing" in str(info.value), str(info.value)


def test_without_nvcc_a_cu_file_says_how(drv, ctx, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("NVCC", raising=False)
    src = tmp_path / "scale.cu"
    src.write_text(SCALE_CU)
    with pytest.raises(CudaError) as info:
        drv.cuModuleLoad(src)
    assert info.value.result is R.CUDA_ERROR_INVALID_SOURCE
    assert "nvcc is not installed" in str(info.value) and "nvcc -ptx" in str(info.value)
