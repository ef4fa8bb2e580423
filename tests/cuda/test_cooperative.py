"""Cooperative launches through every binding (kcuda, libgdev.cuda over a real gdevd mount,
the in-process runtime): cuLaunchCooperativeKernel runs grid-wide barriers; the grid limit is
the occupancy times the multiprocessors, beyond it COOPERATIVE_LAUNCH_TOO_LARGE; a plain
launch of the same kernel still traps at the barrier; the workspace is freed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from libgdev.cuda import CudaError, CUdevice_attribute
from libgdev.cuda import CUresult as R

from .conftest import BINDINGS

PTX = (Path(__file__).resolve().parents[1] / "ptx" / "data" / "coop_sync.ptx").read_text()


@pytest.fixture(params=BINDINGS)
def any_driver(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue(request.param)


def _context(d: Any) -> tuple[Any, Any, Any]:
    ctx = d.cuCtxCreate(0, d.cuDeviceGet(0))
    mod = d.cuModuleLoadData(PTX)
    return ctx, mod, d.cuModuleGetFunction(mod, "rotate")


def test_grid_barriers_of_the_largest_cooperative_grid(any_driver) -> None:
    d = any_driver
    ctx, mod, f = _context(d)
    try:
        per_mp = d.cuOccupancyMaxActiveBlocksPerMultiprocessor(f, 512, 0)
        mps = d.cuDeviceGetAttribute(CUdevice_attribute.MULTIPROCESSOR_COUNT, 0)
        assert d.cuDeviceGetAttribute(CUdevice_attribute.COOPERATIVE_LAUNCH, 0) == 1
        assert per_mp == 2
        grid, n, rounds = per_mp * mps, per_mp * mps * 512, 3
        a0 = (np.arange(n) * 7919 % 1000).astype(np.int32)
        a, tmp = d.cuMemAlloc(4 * n), d.cuMemAlloc(4 * n)
        d.cuMemcpyHtoD(a, a0)
        free_before, _ = d.cuMemGetInfo()
        d.cuLaunchCooperativeKernel(f, grid, 1, 1, 512, 1, 1, 0, None, [a, tmp, rounds])
        d.cuCtxSynchronize()
        want = a0.astype(np.int64)
        for r in range(rounds):
            want = (np.roll(want, -1) * 3 + r) % 1000003
        got = np.zeros(n, np.int32)
        d.cuMemcpyDtoH(got, a)
        assert (got == want).all()
        assert d.cuMemGetInfo()[0] == free_before      # the workspace went back
        with pytest.raises(CudaError, match=R.CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE.name):
            d.cuLaunchCooperativeKernel(f, grid + 1, 1, 1, 512, 1, 1, 0, None, [a, tmp, 1])
        d.cuCtxSynchronize()            # a refused launch leaves the context usable
        d.cuLaunchKernel(f, 2, 1, 1, 32, 1, 1, 0, None, [a, tmp, 1])
        with pytest.raises(CudaError, match=R.CUDA_ERROR_LAUNCH_FAILED.name):
            d.cuCtxSynchronize()        # no workspace: grid.sync() traps, as on a GPU
    finally:
        d.cuCtxDestroy(ctx)


def test_occupancy_follows_threads_and_shared_memory(any_driver) -> None:
    d = any_driver
    ctx, mod, f = _context(d)
    try:
        occ = d.cuOccupancyMaxActiveBlocksPerMultiprocessor
        assert [occ(f, b, 0) for b in (32, 33, 256, 1024)] == [16, 16, 4, 1]
        assert occ(f, 64, 20 * 1024) == 3
        with pytest.raises(CudaError, match=R.CUDA_ERROR_INVALID_VALUE.name):
            occ(f, 0, 0)
    finally:
        d.cuCtxDestroy(ctx)
