"""The CUDA layer's pure parts: errno -> CUresult, argument packing, image sniffing, exports."""

from __future__ import annotations

import errno
import struct
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kcuda
from gdevd.errors import GdevError, KernelFault
from libgdev import cuda
from libgdev.cuda.errors import (
    LOAD_REMAP,
    CudaError,
    CUresult,
    api,
    result_from_errno,
    translate,
)
from libgdev.cuda.launch import pack_params, pack_value

R = CUresult

# What the issue asks for, by name; both bindings must export every one.
REQUIRED = """cuInit cuDriverGetVersion cuDeviceGet cuDeviceGetCount cuDeviceGetName
cuDeviceGetAttribute cuDeviceTotalMem cuDeviceComputeCapability cuCtxCreate cuCtxDestroy
cuCtxSynchronize cuCtxPushCurrent cuCtxPopCurrent cuCtxGetCurrent cuCtxSetCurrent cuMemAlloc
cuMemFree cuMemAllocHost cuMemFreeHost cuMemHostAlloc cuMemGetInfo cuMemsetD8 cuMemsetD16
cuMemsetD32 cuMemcpyHtoD cuMemcpyDtoH cuMemcpyDtoD cuMemcpyHtoDAsync cuMemcpyDtoHAsync
cuMemcpyDtoDAsync cuModuleLoad cuModuleLoadData cuModuleGetFunction cuModuleGetGlobal
cuModuleUnload cuLaunchKernel cuParamSetSize cuParamSeti cuParamSetf cuParamSetv
cuFuncSetBlockShape cuLaunchGrid cuStreamCreate cuStreamDestroy cuStreamSynchronize
cuStreamQuery cuStreamWaitEvent cuEventCreate cuEventDestroy cuEventRecord cuEventQuery
cuEventSynchronize cuEventElapsedTime""".split()


@pytest.mark.parametrize("binding", [cuda, kcuda], ids=["libgdev.cuda", "kcuda"])
def test_both_bindings_export_the_api(binding) -> None:
    missing = [n for n in REQUIRED if not callable(getattr(binding, n, None))]
    assert missing == []
    assert set(REQUIRED) <= set(binding.API_NAMES)


def test_cuda_values_are_cudas() -> None:
    assert (R.CUDA_SUCCESS, R.CUDA_ERROR_INVALID_VALUE, R.CUDA_ERROR_OUT_OF_MEMORY) == (0, 1, 2)
    assert (R.CUDA_ERROR_INVALID_PTX, R.CUDA_ERROR_NOT_FOUND, R.CUDA_ERROR_NOT_READY) == (
        218, 500, 600)
    assert (R.CUDA_ERROR_ILLEGAL_ADDRESS, R.CUDA_ERROR_LAUNCH_FAILED) == (700, 719)


@pytest.mark.parametrize(("err", "result"), [
    (errno.ENOMEM, R.CUDA_ERROR_OUT_OF_MEMORY), (errno.EINVAL, R.CUDA_ERROR_INVALID_VALUE),
    (errno.ENOENT, R.CUDA_ERROR_INVALID_VALUE), (errno.EBADF, R.CUDA_ERROR_INVALID_CONTEXT),
    (errno.ENODEV, R.CUDA_ERROR_INVALID_DEVICE), (errno.EFAULT, R.CUDA_ERROR_ILLEGAL_ADDRESS),
    (errno.ETIME, R.CUDA_ERROR_LAUNCH_TIMEOUT), (errno.EIO, R.CUDA_ERROR_LAUNCH_FAILED),
    (errno.EPERM, R.CUDA_ERROR_NOT_PERMITTED), (12345, R.CUDA_ERROR_UNKNOWN),
])
def test_errno_table(err: int, result: CUresult) -> None:
    assert result_from_errno(err) is result
    # the same errno gives the same result whichever layer raised it
    assert translate(GdevError(err, "x")).result is result
    assert translate(OSError(err, "x")).result is result


def test_api_translates_once_and_keeps_the_cause() -> None:
    @api
    def boom() -> None:
        raise KernelFault(errno.EFAULT, "illegal address in k at line 3")

    with pytest.raises(CudaError) as info:
        boom()
    assert info.value.result is R.CUDA_ERROR_ILLEGAL_ADDRESS
    assert info.value.name == "CUDA_ERROR_ILLEGAL_ADDRESS"
    assert isinstance(info.value.__cause__, KernelFault)
    assert "line 3" in str(info.value)


def test_other_exceptions_are_not_swallowed() -> None:
    @api
    def bug() -> None:
        raise KeyError("a bug stays a bug")

    with pytest.raises(KeyError):
        bug()


def _info(*sizes: int) -> SimpleNamespace:
    params, off = [], 0
    for i, size in enumerate(sizes):
        off = (off + size - 1) // size * size
        params.append(SimpleNamespace(name=f"p{i}", offset=off, size=size, align=size))
        off += size
    return SimpleNamespace(name="k", params=params, param_size=(off + 7) // 8 * 8)


def test_pack_params_by_declared_layout() -> None:
    info = _info(8, 4, 4, 8, 2)
    buf = pack_params(info, [0x20001000, -1, 1.5, np.float64(2.25), np.int16(-2)])
    assert len(buf) == info.param_size
    assert struct.unpack_from("<Q", buf, 0)[0] == 0x20001000
    assert struct.unpack_from("<i", buf, 8)[0] == -1
    assert struct.unpack_from("<f", buf, 12)[0] == 1.5
    assert struct.unpack_from("<d", buf, 16)[0] == 2.25
    assert struct.unpack_from("<h", buf, 24)[0] == -2


@pytest.mark.parametrize("values", [
    [1], [1, 2, 3], [1 << 40, 0], [np.int64(1), 0], [b"abc", 0], [object(), 0],
])
def test_pack_params_rejects_what_does_not_fit(values) -> None:
    with pytest.raises(CudaError) as info:
        pack_params(_info(4, 4), values)
    assert info.value.result is R.CUDA_ERROR_INVALID_VALUE


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([1, 2, 4, 8]), st.data())
def test_pack_value_round_trips_integers(size: int, data) -> None:
    v = data.draw(st.integers(-(1 << (8 * size - 1)), (1 << (8 * size)) - 1))
    raw = pack_value(v, size)
    assert len(raw) == size
    assert int.from_bytes(raw, "little") == v % (1 << (8 * size))


def test_ptx_text_sniffs_images() -> None:
    from gdevd.runtime.api_module import ptx_text  # the daemon checks images now

    src = ".version 7.0\n.target sm_75\n.address_size 64\n"
    assert ptx_text(src.encode()) == src
    assert ptx_text(src.encode() + b"\0") == src
    for bad in (b"\x7fELF\x02\x01", b"\xff\xfe\x00junk", b"no directives here", b"a\0b.version"):
        with pytest.raises(OSError) as info:
            ptx_text(bad)
        assert info.value.errno == errno.ENOEXEC
        assert translate(info.value, LOAD_REMAP).result is R.CUDA_ERROR_INVALID_IMAGE
