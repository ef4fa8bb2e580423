"""Modules, functions, globals and launches (cuLaunchKernel and the legacy API) on the engine."""

from __future__ import annotations

import numpy as np
import pytest

from libgdev.cuda import CudaError
from libgdev.cuda import CUfunction_attribute as FA
from libgdev.cuda import CUresult as R

from . import scenarios
from .conftest import KERNELS

GLOBALS_PTX = """
.version 7.0
.target sm_75
.address_size 64

.global .align 4 .u32 counter = 7;
.global .align 4 .b8 table[8] = {1, 2, 3, 4, 5, 6, 7, 8};

.visible .entry bump(
    .param .u32 inc,
    .param .u64 out
)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<3>;

    ld.param.u32 %r1, [inc];
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    ld.global.u32 %r2, [counter];
    add.s32 %r3, %r2, %r1;
    st.global.u32 [counter], %r3;
    st.global.u32 [%rd2], %r2;
    ret;
}

.visible .entry poke(
    .param .u64 where
)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<3>;

    ld.param.u64 %rd1, [where];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, 1;
    st.global.u32 [%rd2], %r1;
    ret;
}
"""


def _raises(result: R):  # type: ignore[no-untyped-def]
    return pytest.raises(CudaError, match=result.name)


def test_madd_and_loop_legacy(drv) -> None:
    assert np.array_equal(scenarios.madd(drv), scenarios.expected_madd())
    assert np.array_equal(scenarios.loop_legacy(drv), scenarios.expected_loop())


def test_globals(drv, ctx) -> None:
    mod = drv.cuModuleLoadData(GLOBALS_PTX)
    counter, size = drv.cuModuleGetGlobal(mod, "counter")
    table, tsize = drv.cuModuleGetGlobal(mod, "table")
    assert (size, tsize) == (4, 8)
    t = np.zeros(8, np.uint8)
    drv.cuMemcpyDtoH(t, table)
    assert list(t) == [1, 2, 3, 4, 5, 6, 7, 8]
    out = drv.cuMemAlloc(4)
    f = drv.cuModuleGetFunction(mod, "bump")
    assert drv.cuModuleGetFunction(mod, "bump") is f
    drv.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, None, [5, out])
    drv.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, None, [np.uint32(10), out])
    c = np.zeros(1, np.uint32)
    drv.cuMemcpyDtoH(c, counter)
    old = np.zeros(1, np.uint32)
    drv.cuMemcpyDtoH(old, out)
    assert (c[0], old[0]) == (22, 12)
    drv.cuMemcpyHtoD(counter, np.array([100], np.uint32))  # a global is plain device memory
    drv.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, None, [1, out])
    drv.cuMemcpyDtoH(old, out)
    assert old[0] == 100
    with _raises(R.CUDA_ERROR_NOT_FOUND):
        drv.cuModuleGetGlobal(mod, "nope")
    with _raises(R.CUDA_ERROR_NOT_FOUND):
        drv.cuModuleGetFunction(mod, "nope")
    drv.cuModuleUnload(mod)
    with _raises(R.CUDA_ERROR_INVALID_HANDLE):
        drv.cuModuleGetFunction(mod, "bump")
    with _raises(R.CUDA_ERROR_INVALID_HANDLE):
        drv.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, None, [1, out])


def test_module_load_errors(drv, ctx, tmp_path) -> None:
    with _raises(R.CUDA_ERROR_FILE_NOT_FOUND):
        drv.cuModuleLoad(str(tmp_path / "missing.ptx"))
    with _raises(R.CUDA_ERROR_INVALID_IMAGE):
        drv.cuModuleLoadData(b"\x7fELF\x02\x01\x01" + bytes(64))
    with _raises(R.CUDA_ERROR_INVALID_PTX):
        drv.cuModuleLoadData(".version 7.0\n.target sm_75\n.address_size 64\n"
                             ".visible .entry k() { frobnicate.u32 %r1; }\n")
    free, _ = drv.cuMemGetInfo()
    for _ in range(3):  # a failed load leaves nothing allocated
        with pytest.raises(CudaError):
            drv.cuModuleLoadData(GLOBALS_PTX.replace("ret;", "bogus;"))
    assert drv.cuMemGetInfo()[0] == free


def test_launch_argument_errors(drv, ctx) -> None:
    mod = drv.cuModuleLoad(KERNELS / "madd.ptx")
    f = drv.cuModuleGetFunction(mod, "add")
    d = drv.cuMemAlloc(64)
    with _raises(R.CUDA_ERROR_INVALID_VALUE):
        drv.cuLaunchKernel(f, 1, 1, 1, 16, 16, 1, 0, None, [d, d, d])  # too few
    with _raises(R.CUDA_ERROR_INVALID_VALUE):
        drv.cuLaunchKernel(f, 1, 1, 1, 16, 16, 1, 0, None, [d, d, d, 1 << 33])  # u32 overflow
    with _raises(R.CUDA_ERROR_INVALID_VALUE):
        drv.cuLaunchKernel(f, 0, 1, 1, 16, 16, 1, 0, None, [d, d, d, 2])
    with _raises(R.CUDA_ERROR_INVALID_VALUE):
        drv.cuLaunchKernel(f, 1, 1, 1, 64, 32, 1, 0, None, [d, d, d, 2])  # 2048 threads
    with _raises(R.CUDA_ERROR_INVALID_HANDLE):
        drv.cuLaunchKernel("add", 1, 1, 1, 1, 1, 1, 0, None, [d, d, d, 2])
    with _raises(R.CUDA_ERROR_INVALID_VALUE):
        drv.cuLaunchGrid(f, 1, 1)  # no block shape
    drv.cuFuncSetBlockShape(f, 4, 4, 1)
    with _raises(R.CUDA_ERROR_INVALID_VALUE):
        drv.cuLaunchGrid(f, 1, 1)  # no cuParamSetSize
    drv.cuParamSetSize(f, 8)
    with _raises(R.CUDA_ERROR_INVALID_VALUE):
        drv.cuLaunchGrid(f, 1, 1)  # the size does not cover the parameters
    with _raises(R.CUDA_ERROR_INVALID_VALUE):
        drv.cuParamSeti(f, 4094, 1)  # past the parameter buffer
    with _raises(R.CUDA_ERROR_INVALID_VALUE):
        drv.cuParamSetSize(f, 5000)
    other = drv.cuCtxCreate(0, 1)
    with _raises(R.CUDA_ERROR_INVALID_CONTEXT):
        drv.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, None, [d, d, d, 2])
    drv.cuCtxDestroy(other)


def test_illegal_address_is_sticky_and_contained(drv) -> None:
    bad = drv.cuCtxCreate(0, 0)
    mod = drv.cuModuleLoadData(GLOBALS_PTX)
    poke = drv.cuModuleGetFunction(mod, "poke")
    drv.cuLaunchKernel(poke, 1, 1, 1, 1, 1, 1, 0, None, [0x10])  # unmapped
    with _raises(R.CUDA_ERROR_ILLEGAL_ADDRESS):
        drv.cuCtxSynchronize()
    with _raises(R.CUDA_ERROR_ILLEGAL_ADDRESS):
        drv.cuLaunchKernel(poke, 1, 1, 1, 1, 1, 1, 0, None, [0x10])
    with _raises(R.CUDA_ERROR_ILLEGAL_ADDRESS):     # every call fails, allocations too
        drv.cuMemAlloc(64)
    with _raises(R.CUDA_ERROR_ILLEGAL_ADDRESS):     # and creating streams, events, modules
        drv.cuStreamCreate(0)
    with _raises(R.CUDA_ERROR_ILLEGAL_ADDRESS):
        drv.cuEventCreate(0)
    with _raises(R.CUDA_ERROR_ILLEGAL_ADDRESS):
        drv.cuModuleLoadData(GLOBALS_PTX)
    drv.cuCtxPopCurrent()
    assert np.array_equal(scenarios.madd(drv, n=17), scenarios.expected_madd(n=17))
    drv.cuCtxDestroy(bad)  # a faulted context is destroyed all the same


def test_a_failed_device_assert_is_cuda_error_assert_and_sticky(drv) -> None:
    ctx = drv.cuCtxCreate(0, 0)
    ptx = (KERNELS.parent / "tests" / "ptx" / "data" / "assert.ptx").read_bytes()
    f = drv.cuModuleGetFunction(drv.cuModuleLoadData(ptx), "bounded")
    src, out = drv.cuMemAlloc(64 * 4), drv.cuMemAlloc(64 * 4)
    drv.cuMemcpyHtoD(src, np.full(64, 500, np.int32))
    drv.cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, None, [src, out, 64])
    with pytest.raises(CudaError) as ei:
        drv.cuCtxSynchronize()
    assert ei.value.result == R.CUDA_ERROR_ASSERT
    assert "thread: [0,0,0] Assertion `in[i] < 100` failed." in str(ei.value), str(ei.value)
    with _raises(R.CUDA_ERROR_ASSERT):
        drv.cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, None, [src, out, 0])
    drv.cuCtxDestroy(ctx)


def test_fsetsharedsize_and_dynamic_shared(drv, ctx) -> None:
    mod = drv.cuModuleLoad(KERNELS / "reduce.ptx")
    f = drv.cuModuleGetFunction(mod, "reduce_sum_f32")
    rng = np.random.default_rng(3)
    x = rng.random(1000, dtype=np.float32)
    din, dpart = drv.cuMemAlloc(x.nbytes), drv.cuMemAlloc(4 * 8)
    drv.cuMemcpyHtoD(din, x)
    block = 64
    grid = (x.size + 2 * block - 1) // (2 * block)
    drv.cuLaunchKernel(f, grid, 1, 1, block, 1, 1, block * 4, None, [din, dpart, x.size])
    part = np.zeros(grid, np.float32)
    drv.cuMemcpyDtoH(part, dpart)
    assert np.isclose(part.sum(), x.sum(), rtol=1e-4)
    drv.cuFuncSetBlockShape(f, block, 1, 1)
    drv.cuFuncSetSharedSize(f, block * 4)
    drv.cuParamSetv(f, 0, np.uint64(din))
    drv.cuParamSetv(f, 8, np.uint64(dpart))
    drv.cuParamSeti(f, 16, x.size)
    drv.cuParamSetSize(f, 20)
    drv.cuMemsetD8(dpart, 0, grid * 4)
    drv.cuLaunchGrid(f, grid, 1)
    part2 = np.zeros(grid, np.float32)
    drv.cuMemcpyDtoH(part2, dpart)
    assert np.array_equal(part, part2)


def test_function_attributes_and_extra_buffer(drv, ctx) -> None:
    mod = drv.cuModuleLoad(KERNELS / "reduce.ptx")
    f = drv.cuModuleGetFunction(mod, "reduce_stats_u32")
    assert drv.cuFuncGetAttribute(FA.SHARED_SIZE_BYTES, f) == 3 * 256 * 4
    assert drv.cuFuncGetAttribute(FA.MAX_DYNAMIC_SHARED_SIZE_BYTES, f) == 65536 - 3072
    # the device's architecture, and the PTX's virtual one (.target sm_75): CUB chooses its
    # kernels' tuning by it (thrust::sort failed with the PTX ISA version, 7x or 9x, here)
    assert drv.cuFuncGetAttribute(FA.BINARY_VERSION, f) == 75
    assert drv.cuFuncGetAttribute(FA.PTX_VERSION, f) == 75
    assert drv.cuFuncGetAttribute(FA.MAX_THREADS_PER_BLOCK, f) >= 256
    assert drv.cuFuncGetAttribute(FA.NUM_REGS, f) > 0
    with _raises(R.CUDA_ERROR_INVALID_VALUE):
        drv.cuFuncGetAttribute(77, f)

    madd = drv.cuModuleGetFunction(drv.cuModuleLoad(KERNELS / "madd.ptx"), "add")
    a = np.arange(16, dtype=np.uint32)
    da, dc = drv.cuMemAlloc(64), drv.cuMemAlloc(64)
    drv.cuMemcpyHtoD(da, a)
    buf = np.array([da, da, dc], np.uint64).tobytes() + np.uint32(4).tobytes()
    drv.cuLaunchKernel(madd, 1, 1, 1, 16, 16, 1, 0, None, None, extra=buf)
    c = np.zeros(16, np.uint32)
    drv.cuMemcpyDtoH(c, dc)
    assert np.array_equal(c, 2 * a)
    with _raises(R.CUDA_ERROR_INVALID_VALUE):
        drv.cuLaunchKernel(madd, 1, 1, 1, 1, 1, 1, 0, None, None, extra=buf[:20])
    with _raises(R.CUDA_ERROR_INVALID_VALUE):
        drv.cuLaunchKernel(madd, 1, 1, 1, 1, 1, 1, 0, None, [da, da, dc, 4], extra=buf)
