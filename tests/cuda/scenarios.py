"""Programs written once against the CUDA driver API and run through every binding.

Each takes an initialized ``CudaDriver`` (libgdev.cuda over a mount, kcuda in a running
runtime, or in-process) with no current context, does its work in a fresh context, destroys
it, and returns what it computed so that the bindings can be compared with each other and
with numpy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

KERNELS = Path(__file__).resolve().parents[2] / "kernels"


def memory_round_trip(drv: Any) -> bytes:
    """HtoD, memset, DtoD, pinned async DtoH; returns the bytes read back."""
    ctx = drv.cuCtxCreate(0, drv.cuDeviceGet(0))
    try:
        n = 200_000
        src = (np.arange(n, dtype=np.uint32) * 2654435761 % 251).astype(np.uint8)
        a, b = drv.cuMemAlloc(n), drv.cuMemAlloc(n)
        drv.cuMemcpyHtoD(a, src)
        drv.cuMemsetD32(a + 1000, 0xCAFEF00D, 250)
        drv.cuMemcpyDtoD(b, a, n)
        pinned = drv.cuMemAllocHost(n)
        s = drv.cuStreamCreate(0)
        drv.cuMemcpyDtoHAsync(pinned, b, n, s)
        drv.cuStreamSynchronize(s)
        out = bytes(pinned)
        drv.cuStreamDestroy(s)
        drv.cuMemFreeHost(pinned)
        drv.cuMemFree(a)
        drv.cuMemFree(b)
        return out
    finally:
        drv.cuCtxDestroy(ctx)


def expected_memory_round_trip() -> bytes:
    """What :func:`memory_round_trip` must return."""
    n = 200_000
    src = (np.arange(n, dtype=np.uint32) * 2654435761 % 251).astype(np.uint8)
    src[1000:2000] = np.full(250, 0xCAFEF00D, np.uint32).view(np.uint8)
    return src.tobytes()


def madd(drv: Any, n: int = 40, seed: int = 0) -> np.ndarray:
    """The paper's MADD (kernels/madd.ptx ``add``) on n x n u32 matrices via cuLaunchKernel."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2**32, (n, n), dtype=np.uint32)
    b = rng.integers(0, 2**32, (n, n), dtype=np.uint32)
    ctx = drv.cuCtxCreate(0, drv.cuDeviceGet(0))
    try:
        mod = drv.cuModuleLoad(str(KERNELS / "madd.ptx"))
        f = drv.cuModuleGetFunction(mod, "add")
        da, db, dc = (drv.cuMemAlloc(a.nbytes) for _ in range(3))
        drv.cuMemcpyHtoD(da, a)
        drv.cuMemcpyHtoD(db, b)
        g = (n + 15) // 16
        drv.cuLaunchKernel(f, g, g, 1, 16, 16, 1, 0, None, [da, db, dc, n])
        c = np.zeros_like(a)
        drv.cuMemcpyDtoH(c, dc)
        drv.cuModuleUnload(mod)
        return c
    finally:
        drv.cuCtxDestroy(ctx)


def expected_madd(n: int = 40, seed: int = 0) -> np.ndarray:
    """numpy's answer for :func:`madd`."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2**32, (n, n), dtype=np.uint32)
    b = rng.integers(0, 2**32, (n, n), dtype=np.uint32)
    return a + b


def loop_legacy(drv: Any, size: int = 300, n: int = 20) -> np.ndarray:
    """The paper's LOOP through the legacy cuParamSet*/cuFuncSetBlockShape/cuLaunchGrid API."""
    ctx = drv.cuCtxCreate(0, drv.cuDeviceGet(0))
    try:
        mod = drv.cuModuleLoadData((KERNELS / "loop.ptx").read_bytes())
        f = drv.cuModuleGetFunction(mod, "loop")
        d = drv.cuMemAlloc(size * 4)
        drv.cuParamSetv(f, 0, np.uint64(d))
        drv.cuParamSeti(f, 8, size)
        drv.cuParamSeti(f, 12, n)
        drv.cuParamSetSize(f, 16)
        drv.cuFuncSetBlockShape(f, 128, 1, 1)
        drv.cuLaunchGrid(f, (size + 127) // 128, 1)
        out = np.zeros(size, np.uint32)
        drv.cuMemcpyDtoH(out, d)
        return out
    finally:
        drv.cuCtxDestroy(ctx)


def expected_loop(size: int = 300, n: int = 20) -> np.ndarray:
    """numpy's answer for :func:`loop_legacy`."""
    i = np.arange(size, dtype=np.uint64)[:, None]
    k = np.arange(n, dtype=np.uint64)[None, :]
    return ((i * k + (k ^ i)).sum(axis=1) % 2**32).astype(np.uint32)
