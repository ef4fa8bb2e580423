"""cuShmGet/At/Dt/Ctl in both CUDA bindings, errno -> CUresult, and the /proc tables."""

from __future__ import annotations

import numpy as np
import pytest

import kcuda
from gdevd import gdev
from gdevd.runtime import GdevConfig
from libgdev import cuda
from libgdev.cuda import CudaError, CUresult
from libgdev.cuda.shm import CU_IPC_CREAT, CU_IPC_EXCL, CU_IPC_RMID, CU_IPC_STAT
from procfs import read_entry
from procfs.table import ENTRIES

from .conftest import SWAPPY

MiB = 1 << 20


@pytest.mark.parametrize("binding", [cuda, kcuda], ids=["libgdev.cuda", "kcuda"])
def test_both_bindings_export_cushm(binding) -> None:
    for name in ("cuShmGet", "cuShmAt", "cuShmDt", "cuShmCtl"):
        assert callable(getattr(binding, name, None)) and name in binding.API_NAMES


@pytest.fixture
def drv():  # type: ignore[no-untyped-def]
    gdev.boot(GdevConfig(**SWAPPY))
    try:
        d = cuda.bind(gdev)
        d.cuInit(0)
        yield d
        d.shutdown()
        gdev.check_invariants()
    finally:
        gdev.shutdown()


def _fails(result: CUresult, fn, *args) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(CudaError) as info:
        fn(*args)
    assert info.value.result == result, info.value


def test_cushm_round_trip_and_errors(drv) -> None:  # type: ignore[no-untyped-def]
    a = drv.cuCtxCreate(0, 0)
    sid = drv.cuShmGet(77, MiB, CU_IPC_CREAT | 0o600)
    _fails(CUresult.CUDA_ERROR_INVALID_VALUE, drv.cuShmGet, 77, MiB,
           CU_IPC_CREAT | CU_IPC_EXCL | 0o600)
    _fails(CUresult.CUDA_ERROR_INVALID_VALUE, drv.cuShmGet, 78, MiB, 0)      # ENOENT
    _fails(CUresult.CUDA_ERROR_OUT_OF_MEMORY, drv.cuShmGet, 79, 64 * MiB, CU_IPC_CREAT)
    _fails(CUresult.CUDA_ERROR_OUT_OF_MEMORY, drv.cuMemAlloc, 64 * MiB)
    d = drv.cuShmAt(sid)
    data = np.arange(MiB // 4, dtype=np.uint32)
    drv.cuMemcpyHtoD(d, data)
    b = drv.cuCtxCreate(0, 1)                    # current now: a second context
    d2 = drv.cuShmAt(drv.cuShmGet(77, 0, 0o600))
    out = np.zeros_like(data)
    drv.cuMemcpyDtoH(out, d2)
    assert np.array_equal(out, data)
    assert drv.cuShmCtl(sid, CU_IPC_STAT).nattch == 2
    system = gdev.system()
    shm = next(e for e in ENTRIES if e.name == "shm")
    ctxs = next(e for e in ENTRIES if e.name == "contexts")
    text = gdev._facade().call(_read, shm, system)
    assert str(sid) in text and len(text.splitlines()) == 2
    assert len(gdev._facade().call(_read, ctxs, system).splitlines()) == 3
    drv.cuShmCtl(sid, CU_IPC_RMID)
    drv.cuShmDt(d2)
    drv.cuCtxDestroy(b)
    drv.cuCtxSetCurrent(a)
    drv.cuShmDt(d)
    assert not system.shm.segments
    drv.cuCtxDestroy(a)


async def _read(entry, target) -> str:  # type: ignore[no-untyped-def]
    return read_entry(entry, target).decode()
