"""cuGetErrorName / cuGetErrorString: NVIDIA's names and texts, no cuInit needed."""

from __future__ import annotations

import pytest

import libgdev.cuda
from libgdev.cuda import CudaError, CUresult
from libgdev.cuda.driver import CudaDriver
from libgdev.cuda.errors import ERROR_STRINGS


def test_names_and_texts_are_nvidias() -> None:
    drv = CudaDriver(None)                       # never initialized
    assert drv.cuGetErrorName(0) == "CUDA_SUCCESS" and drv.cuGetErrorString(0) == "no error"
    assert drv.cuGetErrorName(CUresult.CUDA_ERROR_OUT_OF_MEMORY) == "CUDA_ERROR_OUT_OF_MEMORY"
    assert drv.cuGetErrorString(2) == "out of memory"
    assert drv.cuGetErrorString(1) == "invalid argument"
    assert drv.cuGetErrorString(201) == "invalid device context"
    assert drv.cuGetErrorString(700) == "an illegal memory access was encountered"
    assert drv.cuGetErrorString(719) == "unspecified launch failure"
    assert drv.cuGetErrorString(800) == "operation not permitted"
    assert set(ERROR_STRINGS) == set(CUresult)   # every result the layer raises has its text
    for r in CUresult:
        assert drv.cuGetErrorName(int(r)) == r.name


@pytest.mark.parametrize("bad", [5, -1, 1000, True, "1", None])
def test_unknown_results_are_invalid_values(bad: object) -> None:
    for fn in (libgdev.cuda.cuGetErrorName, libgdev.cuda.cuGetErrorString):
        with pytest.raises(CudaError) as info:
            fn(bad)
        assert info.value.result == CUresult.CUDA_ERROR_INVALID_VALUE
