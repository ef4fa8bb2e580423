"""Initialization, devices and contexts over the real runtime."""

from __future__ import annotations

import threading

import pytest

from libgdev.cuda import CudaError, bind
from libgdev.cuda import CUdevice_attribute as A
from libgdev.cuda import CUresult as R

from .conftest import VGPU_MEM


def _raises(result: R):  # type: ignore[no-untyped-def]
    return pytest.raises(CudaError, match=result.name)


def test_calls_before_cuinit_fail(kernel_thread) -> None:
    from gdevd.facade import RuntimeFacade

    d = bind(RuntimeFacade(kernel_thread.system, kernel_thread.token))
    assert d.cuDriverGetVersion() == 4000  # needs no cuInit
    with _raises(R.CUDA_ERROR_NOT_INITIALIZED):
        d.cuDeviceGetCount()
    with _raises(R.CUDA_ERROR_INVALID_VALUE):
        d.cuInit(1)
    d.cuInit(0)
    d.cuInit(0)  # idempotent
    assert d.cuDeviceGetCount() == 4


def test_devices(drv) -> None:
    assert drv.cuDeviceGetCount() == 4
    dev = drv.cuDeviceGet(3)
    assert dev == 3
    assert drv.cuDeviceGetName(dev) == "Gdev Emulated GPU"
    assert drv.cuDeviceComputeCapability(dev) == (7, 5)
    assert drv.cuDeviceTotalMem(dev) == VGPU_MEM  # a quarter of 64 MiB less the swap area
    assert drv.cuDeviceGetAttribute(A.COMPUTE_CAPABILITY_MAJOR, dev) == 7
    assert drv.cuDeviceGetAttribute(A.MAX_THREADS_PER_BLOCK, dev) == 1024
    assert drv.cuDeviceGetAttribute(A.WARP_SIZE, dev) == 32
    assert drv.cuDeviceGetAttribute(A.MULTIPROCESSOR_COUNT, dev) >= 1
    for bad in (-1, 4, "0", 1.0, None):
        with _raises(R.CUDA_ERROR_INVALID_DEVICE):
            drv.cuDeviceGet(bad)
    with _raises(R.CUDA_ERROR_INVALID_VALUE):
        drv.cuDeviceGetAttribute(9999, dev)


def test_context_stack(drv) -> None:
    assert drv.cuCtxGetCurrent() is None
    with _raises(R.CUDA_ERROR_INVALID_CONTEXT):
        drv.cuCtxSynchronize()
    a = drv.cuCtxCreate(0, 0)
    b = drv.cuCtxCreate(0, 1)
    assert drv.cuCtxGetCurrent() is b and drv.cuCtxGetDevice() == 1
    assert drv.cuCtxPopCurrent() is b
    assert drv.cuCtxGetCurrent() is a and drv.cuCtxGetDevice() == 0
    drv.cuCtxPushCurrent(b)
    drv.cuCtxSetCurrent(a)  # replaces the top
    assert drv.cuCtxPopCurrent() is a
    assert drv.cuCtxPopCurrent() is a
    with _raises(R.CUDA_ERROR_INVALID_CONTEXT):
        drv.cuCtxPopCurrent()
    drv.cuCtxSetCurrent(b)
    drv.cuCtxSynchronize()
    assert drv.cuCtxGetCacheConfig() == 0
    drv.cuCtxSetCacheConfig(1)
    assert drv.cuCtxGetCacheConfig() == 1
    with _raises(R.CUDA_ERROR_INVALID_VALUE):
        drv.cuCtxSetCacheConfig(7)
    drv.cuCtxDestroy(b)
    assert drv.cuCtxGetCurrent() is None
    with _raises(R.CUDA_ERROR_INVALID_CONTEXT):
        drv.cuCtxPushCurrent(b)
    drv.cuCtxDestroy(a)
    with _raises(R.CUDA_ERROR_INVALID_CONTEXT):
        drv.cuCtxDestroy(a)
    with _raises(R.CUDA_ERROR_INVALID_VALUE):
        drv.cuCtxCreate(0x1000, 0)
    with _raises(R.CUDA_ERROR_INVALID_DEVICE):
        drv.cuCtxCreate(0, 7)


def test_current_context_is_per_thread(drv) -> None:
    a = drv.cuCtxCreate(0, 0)
    seen: list[object] = []

    def other() -> None:
        seen.append(drv.cuCtxGetCurrent())
        drv.cuCtxPushCurrent(a)  # a context may be current in several threads
        seen.append(drv.cuCtxGetDevice())
        drv.cuCtxPopCurrent()

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen == [None, 0]
    assert drv.cuCtxGetCurrent() is a
    drv.cuCtxDestroy(a)


def test_destroyed_context_on_another_thread(drv) -> None:
    a = drv.cuCtxCreate(0, 0)
    drv.cuCtxPopCurrent()
    errors: list[R] = []
    ready, destroyed = threading.Event(), threading.Event()

    def other() -> None:
        drv.cuCtxPushCurrent(a)
        ready.set()
        destroyed.wait()
        try:
            drv.cuMemAlloc(4096)
        except CudaError as e:
            errors.append(e.result)

    t = threading.Thread(target=other)
    t.start()
    ready.wait()
    drv.cuCtxDestroy(a)
    destroyed.set()
    t.join()
    assert errors == [R.CUDA_ERROR_CONTEXT_IS_DESTROYED]
