"""Streams of one CUDA context overlap, on every binding (the daemon over the wire too).

``handshake`` (kernels/streams.cu) raises its flag and spins until two others are raised, so
the two launches below can only end side by side; a copy in a third stream reads both flags
while they spin and writes the flag they wait for.  The device's event timestamps then show
the overlap: each stream's interval starts before the other's ends."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

from libgdev.cuda import CU_STREAM_NON_BLOCKING, CudaError
from libgdev.cuda import CUresult as R

from .conftest import BINDINGS, KERNELS

FLAGS = 64 << 10            # above the direct limits: the copies take the copy engines


@pytest.fixture(params=BINDINGS)
def any_driver(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue(request.param)


def _poll_flags(drv: Any, flags: int, stream: Any, want: list[int]) -> None:
    host = np.zeros(FLAGS // 4, np.uint32)
    deadline = time.monotonic() + 60
    while True:
        drv.cuMemcpyDtoHAsync(host, flags, None, stream)    # pageable: done on return
        if list(host[:len(want)]) == want:
            return
        assert time.monotonic() < deadline, f"flags {host[:3]}: the streams never overlapped"
        time.sleep(0.005)


def test_two_kernels_and_a_copy_overlap_by_event_timestamps(any_driver: Any) -> None:
    drv = any_driver
    ctx = drv.cuCtxCreate(0, drv.cuDeviceGet(0))
    try:
        hs = drv.cuModuleGetFunction(drv.cuModuleLoad(KERNELS / "streams.ptx"), "handshake")
        flags = drv.cuMemAlloc(FLAGS)
        drv.cuMemsetD32(flags, 0, FLAGS // 4)
        one = drv.cuMemAllocHost(4)
        one.view(np.uint32)[0] = 1
        s1, s2, s3 = (drv.cuStreamCreate(0) for _ in range(3))
        ev = {k: drv.cuEventCreate(0) for k in ("a0", "a1", "b0", "b1", "c0", "c1")}
        for name, s, me, others in (("a", s1, 0, (1, 2)), ("b", s2, 1, (0, 2))):
            drv.cuEventRecord(ev[name + "0"], s)
            drv.cuLaunchKernel(hs, 1, 1, 1, 1, 1, 1, 0, s, [flags, me, *others])
            drv.cuEventRecord(ev[name + "1"], s)
        _poll_flags(drv, flags, s3, [1, 1, 0])                 # both kernels spin now
        with pytest.raises(CudaError, match=R.CUDA_ERROR_NOT_READY.name):
            drv.cuStreamQuery(s1)
        drv.cuEventRecord(ev["c0"], s3)
        drv.cuMemcpyHtoDAsync(flags + 8, one, 4, s3)           # pinned: the copy engine
        drv.cuEventRecord(ev["c1"], s3)
        drv.cuStreamSynchronize(s1)
        drv.cuCtxSynchronize()

        def before(x: str, y: str) -> bool:
            return drv.cuEventElapsedTime(ev[x], ev[y]) > 0
        assert before("a0", "b1") and before("b0", "a1")      # the kernels overlap
        assert before("c0", "a1") and before("a0", "c1")      # the copy ran inside kernel a
        drv.cuStreamQuery(s1)
        for s in (s1, s2, s3):
            drv.cuStreamDestroy(s)
    finally:
        drv.cuCtxDestroy(ctx)


def test_stream_wait_event_orders_a_non_blocking_stream(any_driver: Any) -> None:
    drv = any_driver
    ctx = drv.cuCtxCreate(0, drv.cuDeviceGet(0))
    try:
        loop = drv.cuModuleGetFunction(drv.cuModuleLoad(KERNELS / "loop.ptx"), "loop")
        size, n = 256, 2000
        src, dst = drv.cuMemAlloc(4 * size), drv.cuMemAlloc(4 * size)
        out = drv.cuMemAllocHost(4 * size)
        a, b = drv.cuStreamCreate(0), drv.cuStreamCreate(CU_STREAM_NON_BLOCKING)
        done = drv.cuEventCreate(0)
        drv.cuLaunchKernel(loop, size // 64, 1, 1, 64, 1, 1, 0, a, [src, size, n])
        drv.cuEventRecord(done, a)
        drv.cuStreamWaitEvent(b, done, 0)
        drv.cuMemcpyDtoDAsync(dst, src, 4 * size, b)
        drv.cuMemcpyDtoHAsync(out, dst, None, b)
        drv.cuStreamSynchronize(b)
        i = np.arange(size, dtype=np.uint64)[:, None]
        k = np.arange(n, dtype=np.uint64)[None, :]
        want = ((i * k + (k ^ i)).sum(axis=1) % 2**32).astype(np.uint32)
        assert np.array_equal(out.view(np.uint32), want)
    finally:
        drv.cuCtxDestroy(ctx)
