"""CUDA's virtual memory management through every binding (kcuda, libgdev through a mounted
gdevd, gdevd.gdev): vectorAddMMAP's sequence (granularity, reserve, create, map, set
access, copies and a memset over a range backed by two allocations, unmap, release, free),
retain and properties, export/import between two contexts, and CUDA's results for bad
arguments."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

from libgdev.cuda import CudaError
from libgdev.cuda import CUresult as R
from libgdev.cuda.vmm import (
    CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    CU_MEM_ALLOC_GRANULARITY_MINIMUM,
    CU_MEM_ALLOC_GRANULARITY_RECOMMENDED,
    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
    CU_MEM_LOCATION_TYPE_DEVICE,
)

from .conftest import BINDINGS, MiB

RW = CU_MEM_ACCESS_FLAGS_PROT_READWRITE
FD = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR


@pytest.fixture(params=BINDINGS)
def any_driver(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue(request.param)


def _raises(result: R):  # type: ignore[no-untyped-def]
    return pytest.raises(CudaError, match=result.name)


def _prop(dev: int) -> dict[str, Any]:
    return {"location": (CU_MEM_LOCATION_TYPE_DEVICE, dev), "requestedHandleTypes": FD}


def test_a_buffer_of_two_allocations_as_vector_add_mmap_builds_it(any_driver) -> None:
    drv = any_driver
    ctx = drv.cuCtxCreate(0, 0)
    try:
        gran = drv.cuMemGetAllocationGranularity(_prop(0), CU_MEM_ALLOC_GRANULARITY_MINIMUM)
        assert gran == 4096
        assert drv.cuMemGetAllocationGranularity(
            _prop(0), CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) == 2 * MiB
        size = 2 * MiB
        va = drv.cuMemAddressReserve(size, 0, 0, 0)
        first, second = drv.cuMemCreate(MiB, _prop(0), 0), drv.cuMemCreate(MiB, _prop(0), 0)
        drv.cuMemMap(va, MiB, 0, first, 0)
        drv.cuMemMap(va + MiB, MiB, 0, second, 0)
        drv.cuMemSetAccess(va, size, [((CU_MEM_LOCATION_TYPE_DEVICE, 0), RW)])
        assert drv.cuMemGetAccess((CU_MEM_LOCATION_TYPE_DEVICE, 0), va + MiB) == RW
        data = np.arange(size // 4, dtype=np.uint32)
        drv.cuMemcpyHtoD(va, data)
        drv.cuMemsetD32(va + MiB - 8, 0xDEADBEEF, 4)            # across the seam
        out = np.zeros_like(data)
        drv.cuMemcpyDtoH(out, va)
        want = data.copy()
        want[MiB // 4 - 2:MiB // 4 + 2] = 0xDEADBEEF
        assert (out == want).all()
        h = drv.cuMemRetainAllocationHandle(va + MiB + 4096)
        assert h == second and drv.cuMemGetAllocationPropertiesFromHandle(h)["size"] == MiB
        drv.cuMemRelease(h)
        drv.cuMemRelease(first)
        drv.cuMemRelease(second)
        drv.cuMemcpyDtoH(out, va)                               # mapped: still there
        assert (out == want).all()
        drv.cuMemUnmap(va, size)
        drv.cuMemAddressFree(va, size)
    finally:
        drv.cuCtxDestroy(ctx)


def test_cuda_results_for_bad_arguments(any_driver) -> None:
    drv = any_driver
    ctx = drv.cuCtxCreate(0, 0)
    try:
        va = drv.cuMemAddressReserve(MiB, 0, 0, 0)
        mem = drv.cuMemCreate(MiB, _prop(0), 0)
        with _raises(R.CUDA_ERROR_INVALID_VALUE):
            drv.cuMemCreate(1000, _prop(0), 0)                  # not the granularity
        with _raises(R.CUDA_ERROR_INVALID_DEVICE):
            drv.cuMemCreate(MiB, _prop(1), 0)                   # not the context's device
        with _raises(R.CUDA_ERROR_OUT_OF_MEMORY):
            drv.cuMemCreate(64 * MiB, _prop(0), 0)              # beyond the vGPU's share
        with _raises(R.CUDA_ERROR_INVALID_VALUE):
            drv.cuMemMap(va, MiB, 0, mem + 1000, 0)              # no such handle
        with _raises(R.CUDA_ERROR_INVALID_VALUE):
            drv.cuMemMap(va + 4096, MiB, 0, mem, 0)              # past the reservation
        with _raises(R.CUDA_ERROR_INVALID_VALUE):
            drv.cuMemRelease(mem + 1000)
        with _raises(R.CUDA_ERROR_NOT_SUPPORTED):
            drv.cuMemExportToShareableHandle(mem, 2, 0)          # not a POSIX fd
        drv.cuMemMap(va, MiB, 0, mem, 0)
        with pytest.raises(CudaError, match="INVALID_VALUE.*unmapped access at"):
            drv.cuMemsetD8(va, 1, 16)                            # mapped, no access
        with _raises(R.CUDA_ERROR_INVALID_VALUE):
            drv.cuMemAddressFree(va, MiB)                        # still mapped
        drv.cuMemUnmap(va, MiB)
        drv.cuMemRelease(mem)
        drv.cuMemAddressFree(va, MiB)
    finally:
        drv.cuCtxDestroy(ctx)


def test_export_and_import_between_contexts(any_driver) -> None:
    drv = any_driver
    a = drv.cuCtxCreate(0, 0)
    b = drv.cuCtxCreate(0, 1)
    try:
        drv.cuCtxSetCurrent(a)
        mem = drv.cuMemCreate(MiB, _prop(0), 0)
        va = drv.cuMemAddressReserve(MiB, 0, 0, 0)
        drv.cuMemMap(va, MiB, 0, mem, 0)
        drv.cuMemSetAccess(va, MiB, [((CU_MEM_LOCATION_TYPE_DEVICE, 0), RW)])
        drv.cuMemsetD32(va, 0x5EED, MiB // 4)
        fd = drv.cuMemExportToShareableHandle(mem, FD, 0)
        try:
            drv.cuCtxSetCurrent(b)
            theirs = drv.cuMemImportFromShareableHandle(fd, FD)
            vb = drv.cuMemAddressReserve(MiB, 0, 0, 0)
            drv.cuMemMap(vb, MiB, 0, theirs, 0)
            drv.cuMemSetAccess(vb, MiB, [((CU_MEM_LOCATION_TYPE_DEVICE, 1), RW)])
            out = np.zeros(MiB // 4, np.uint32)
            drv.cuMemcpyDtoH(out, vb)
            assert (out == 0x5EED).all()
            drv.cuMemUnmap(vb, MiB)
            drv.cuMemRelease(theirs)
            drv.cuMemAddressFree(vb, MiB)
        finally:
            os.close(fd)
    finally:
        drv.cuCtxDestroy(b)
        drv.cuCtxDestroy(a)
