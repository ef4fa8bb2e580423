"""Streams and events: ordering, queries, and timestamps taken by the emulated device."""

from __future__ import annotations

import time

import numpy as np
import pytest

from libgdev.cuda import CU_EVENT_DISABLE_TIMING, CU_STREAM_NON_BLOCKING, CudaError
from libgdev.cuda import CUresult as R

from .conftest import KERNELS


def _raises(result: R):  # type: ignore[no-untyped-def]
    return pytest.raises(CudaError, match=result.name)


@pytest.fixture
def loop_fn(drv, ctx):  # type: ignore[no-untyped-def]
    """LOOP (kernels/loop.ptx): time grows linearly with its iteration count."""
    mod = drv.cuModuleLoad(KERNELS / "loop.ptx")
    return drv.cuModuleGetFunction(mod, "loop")


def _expected_loop(size: int, n: int) -> np.ndarray:
    i = np.arange(size, dtype=np.uint64)[:, None]
    k = np.arange(n, dtype=np.uint64)[None, :]
    return ((i * k + (k ^ i)).sum(axis=1) % 2**32).astype(np.uint32)


def _launch_loop(drv, f, d, size: int, n: int, stream=None) -> None:  # type: ignore[no-untyped-def]
    drv.cuLaunchKernel(f, (size + 63) // 64, 1, 1, 64, 1, 1, 0, stream, [d, size, n])


def test_stream_work_is_ordered(drv, ctx, loop_fn) -> None:
    """copy in -> kernel -> kernel -> pinned copy out, all async in one stream."""
    size = 256
    pinned = drv.cuMemAllocHost(size * 4)
    d = drv.cuMemAlloc(size * 4)
    s = drv.cuStreamCreate(0)
    drv.cuMemsetD32Async(d, 0xFFFFFFFF, size, s)
    _launch_loop(drv, loop_fn, d, size, 3, s)
    _launch_loop(drv, loop_fn, d, size, 40, s)  # the last write wins only if in order
    drv.cuMemcpyDtoHAsync(pinned, d, None, s)
    drv.cuStreamSynchronize(s)
    assert np.array_equal(pinned.view(np.uint32), _expected_loop(size, 40))
    drv.cuStreamDestroy(s)
    with _raises(R.CUDA_ERROR_INVALID_HANDLE):
        drv.cuStreamSynchronize(s)
    with _raises(R.CUDA_ERROR_INVALID_HANDLE):
        drv.cuStreamDestroy(None)
    with _raises(R.CUDA_ERROR_INVALID_VALUE):
        drv.cuStreamCreate(0x10)


@pytest.fixture
def engine_hold(kernel_thread):  # type: ignore[no-untyped-def]
    """The compute engine's hold (the scheduler's seam): cleared, launches wait at a slice
    boundary, so "still running" is deterministic; always released afterwards."""
    hold = kernel_thread.system.physical[0].compute.hold
    yield hold
    hold.set()


def test_query_says_not_ready_while_the_device_works(drv, ctx, loop_fn, engine_hold) -> None:
    d = drv.cuMemAlloc(64 * 4)
    s = drv.cuStreamCreate(CU_STREAM_NON_BLOCKING)
    ev = drv.cuEventCreate(CU_EVENT_DISABLE_TIMING)
    drv.cuEventQuery(ev)  # never recorded: complete
    engine_hold.clear()
    _launch_loop(drv, loop_fn, d, 64, 100, s)
    drv.cuEventRecord(ev, s)
    with _raises(R.CUDA_ERROR_NOT_READY):
        drv.cuStreamQuery(s)
    with _raises(R.CUDA_ERROR_NOT_READY):
        drv.cuEventQuery(ev)
    engine_hold.set()
    drv.cuEventSynchronize(ev)
    drv.cuEventQuery(ev)
    drv.cuStreamQuery(s)
    drv.cuStreamQuery(None)
    with _raises(R.CUDA_ERROR_INVALID_HANDLE):
        drv.cuEventElapsedTime(ev, ev)  # no timestamps
    drv.cuEventDestroy(ev)
    with _raises(R.CUDA_ERROR_INVALID_HANDLE):
        drv.cuEventQuery(ev)


def test_event_times_are_the_devices(drv, ctx, loop_fn) -> None:
    """Elapsed time covers the kernel between the events, not the host's later wait."""
    d = drv.cuMemAlloc(64 * 4)
    start, end, later = (drv.cuEventCreate() for _ in range(3))
    t0 = time.monotonic()  # before the start marker can run
    drv.cuEventRecord(start, None)
    _launch_loop(drv, loop_fn, d, 64, 3000)
    drv.cuEventRecord(end, None)
    drv.cuEventSynchronize(end)
    kernel_wall = time.monotonic() - t0
    time.sleep(0.3)  # the host dawdles before recording the next event
    drv.cuEventRecord(later, None)
    time.sleep(0.3)  # ... and before synchronizing: the device stamped it already
    drv.cuEventSynchronize(later)
    ms = drv.cuEventElapsedTime(start, end)
    assert 0 < ms <= kernel_wall * 1000
    gap = drv.cuEventElapsedTime(end, later)
    assert 290 <= gap < 600  # the first sleep only
    assert drv.cuEventElapsedTime(end, start) == pytest.approx(-ms)
    for ev in (start, end, later):
        drv.cuEventDestroy(ev)


def test_elapsed_time_of_a_pending_event_is_not_ready(drv, ctx, loop_fn, engine_hold) -> None:
    d = drv.cuMemAlloc(64 * 4)
    a, b = drv.cuEventCreate(), drv.cuEventCreate()
    with _raises(R.CUDA_ERROR_INVALID_HANDLE):
        drv.cuEventElapsedTime(a, b)  # never recorded
    drv.cuEventRecord(a, None)
    drv.cuEventSynchronize(a)
    engine_hold.clear()
    _launch_loop(drv, loop_fn, d, 64, 100)
    drv.cuEventRecord(b, None)
    with _raises(R.CUDA_ERROR_NOT_READY):
        drv.cuEventElapsedTime(a, b)
    time.sleep(0.05)
    engine_hold.set()
    drv.cuCtxSynchronize()
    assert drv.cuEventElapsedTime(a, b) >= 50  # the device was held that long


def test_wait_event_across_contexts(drv, loop_fn) -> None:
    producer = drv.cuCtxGetCurrent()
    d = drv.cuMemAlloc(64 * 4)
    ev = drv.cuEventCreate()
    _launch_loop(drv, loop_fn, d, 64, 5000)
    drv.cuEventRecord(ev, None)
    consumer = drv.cuCtxCreate(0, 1)
    s = drv.cuStreamCreate(0)
    drv.cuStreamWaitEvent(s, ev, 0)  # another context's event: waited for on the host
    drv.cuCtxPushCurrent(producer)
    drv.cuEventQuery(ev)
    drv.cuCtxPopCurrent()
    drv.cuCtxDestroy(consumer)


def test_many_events_reuse_slots(drv, ctx) -> None:
    evs = [drv.cuEventCreate() for _ in range(600)]  # more than one page of slots
    assert len({e.slot for e in evs}) == 600
    for e in evs[:10]:
        drv.cuEventRecord(e, None)
    drv.cuEventSynchronize(evs[9])
    stamps = [drv.cuEventElapsedTime(evs[0], e) for e in evs[:10]]
    assert stamps == sorted(stamps)
    slots = {e.slot for e in evs}
    for e in evs:
        drv.cuEventDestroy(e)
    again = drv.cuEventCreate()
    assert again.slot in slots
