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


def _run(drv: Any, ptx: str, name: str, inputs: dict[str, np.ndarray], outputs: dict[str, Any],
         grid: tuple[int, int, int], block: tuple[int, int, int], args: list[Any],
         shared: int = 0, stream: bool = False) -> dict[str, np.ndarray]:
    """Upload ``inputs``, allocate ``outputs`` (name -> (shape, dtype)), launch ``name`` of
    kernels/``ptx`` with ``args`` (strings name buffers), read the outputs back."""
    ctx = drv.cuCtxCreate(0, drv.cuDeviceGet(0))
    try:
        mod = drv.cuModuleLoad(str(KERNELS / ptx))
        f = drv.cuModuleGetFunction(mod, name)
        dev: dict[str, int] = {}
        for key, arr in inputs.items():
            dev[key] = drv.cuMemAlloc(max(arr.nbytes, 4))
            drv.cuMemcpyHtoD(dev[key], arr)
        for key, (shape, dtype) in outputs.items():
            nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
            dev[key] = drv.cuMemAlloc(nbytes)
            drv.cuMemsetD8(dev[key], 0, nbytes)
        s = drv.cuStreamCreate(0) if stream else None
        params = [dev[a] if isinstance(a, str) else a for a in args]
        drv.cuLaunchKernel(f, *grid, *block, shared, s, params)
        if s is not None:
            drv.cuStreamSynchronize(s)
        out = {}
        for key, (shape, dtype) in outputs.items():
            out[key] = np.zeros(shape, dtype)
            drv.cuMemcpyDtoH(out[key], dev[key])
        return out
    finally:
        drv.cuCtxDestroy(ctx)


def mmul_tiled(drv: Any, n: int = 37) -> np.ndarray:
    """The paper's MMUL, shared-memory tiled (kernels/mmul.ptx ``multiply_tiled``)."""
    a, b = _mmul_inputs(n)
    g = (n + 15) // 16
    return _run(drv, "mmul.ptx", "multiply_tiled", {"a": a, "b": b}, {"c": ((n, n), np.uint32)},
                (g, g, 1), (16, 16, 1), ["a", "b", "c", n], stream=True)["c"]


def _mmul_inputs(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(n)
    return (rng.integers(0, 1000, (n, n), dtype=np.uint32),
            rng.integers(0, 1000, (n, n), dtype=np.uint32))


def expected_mmul(n: int = 37) -> np.ndarray:
    """numpy's answer for :func:`mmul_tiled` (modulo 2^32)."""
    a, b = _mmul_inputs(n)
    return (a.astype(np.uint64) @ b.astype(np.uint64) % 2**32).astype(np.uint32)


def histogram(drv: Any, n: int = 5000, nbins: int = 37) -> np.ndarray:
    """Atomic histogram with dynamic shared memory (kernels/histogram.ptx)."""
    x = np.random.default_rng(7).integers(0, 2**32, n, dtype=np.uint32)
    return _run(drv, "histogram.ptx", "histogram_shared", {"x": x},
                {"bins": ((nbins,), np.uint32)}, (4, 1, 1), (128, 1, 1),
                ["x", n, "bins", nbins], shared=nbins * 4)["bins"]


def expected_histogram(n: int = 5000, nbins: int = 37) -> np.ndarray:
    """numpy's answer for :func:`histogram`."""
    x = np.random.default_rng(7).integers(0, 2**32, n, dtype=np.uint32)
    return np.bincount(x % nbins, minlength=nbins).astype(np.uint32)


def nn(drv: Any, n: int = 1000) -> np.ndarray:
    """Rodinia NN ``euclid`` (kernels/nn.ptx): distances to a point, float params."""
    loc = np.random.default_rng(11).random((n, 2), dtype=np.float32) * 90
    return _run(drv, "nn.ptx", "euclid", {"loc": loc}, {"d": ((n,), np.float32)},
                ((n + 255) // 256, 1, 1), (256, 1, 1), ["loc", "d", n, 30.0, 60.0])["d"]


def expected_nn(n: int = 1000) -> np.ndarray:
    """numpy's answer for :func:`nn`."""
    loc = np.random.default_rng(11).random((n, 2), dtype=np.float32) * 90
    lat, lng = np.float32(30.0), np.float32(60.0)
    return np.sqrt((lat - loc[:, 0]) ** 2 + (lng - loc[:, 1]) ** 2).astype(np.float32)
