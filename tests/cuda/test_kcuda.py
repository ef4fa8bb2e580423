"""kcuda's life cycle in a running runtime: attach, use from worker threads, detach."""

from __future__ import annotations

import threading

import pytest
import trio

import kcuda
from libgdev.cuda import CudaError

from .conftest import KernelThread


def test_unattached_kcuda_says_not_initialized() -> None:
    assert not kcuda.attached()
    with pytest.raises(CudaError, match="CUDA_ERROR_NO_DEVICE|CUDA_ERROR_NOT_INITIALIZED"):
        kcuda.cuInit(0)
    with pytest.raises(CudaError, match="CUDA_ERROR_NOT_INITIALIZED"):
        kcuda.cuMemAlloc(4096)


def test_attach_use_detach_from_the_loop() -> None:
    kt = KernelThread().start()
    try:
        kcuda.attach(kt.system, kt.token)
        with pytest.raises(RuntimeError):
            kcuda.attach(kt.system, kt.token)
        kcuda.cuInit(0)
        ctx = kcuda.cuCtxCreate(0, 2)
        d = kcuda.cuMemAlloc(8192)
        kcuda.cuMemsetD8(d, 7, 8192)
        assert kt.run_sync(lambda: kt.system.virtual[2].memory_used) >= 8192

        with pytest.raises(RuntimeError, match="to_thread"):
            kt.run_sync(kcuda.cuDeviceGetName, 1)  # on the loop thread: refused, no deadlock
        # the daemon's teardown runs detach on the loop thread, where verbs cannot block
        old = kcuda.driver
        kt.run_sync(kcuda.detach)
        assert not kcuda.attached()
        with pytest.raises(CudaError, match="CUDA_ERROR_CONTEXT_IS_DESTROYED"):
            old.cuMemAlloc(1)
        with pytest.raises(CudaError, match="CUDA_ERROR_NOT_INITIALIZED"):
            kcuda.cuMemAlloc(1)  # a fresh, unattached driver
        assert ctx.destroyed
    finally:
        kcuda.detach()
        kt.stop()  # the system's exit closed the handle detach left behind


def test_calls_from_many_worker_threads() -> None:
    """In-daemon modules call kcuda from trio worker threads, concurrently."""
    kt = KernelThread().start()
    kcuda.attach(kt.system, kt.token)
    try:
        kcuda.cuInit(0)
        results: list[bytes] = []

        def worker(i: int) -> None:
            ctx = kcuda.cuCtxCreate(0, i % 4)
            d = kcuda.cuMemAlloc(4096)
            kcuda.cuMemsetD8(d, i, 4096)
            out = bytearray(4096)
            kcuda.cuMemcpyDtoH(out, d)
            kcuda.cuCtxDestroy(ctx)
            results.append(bytes(out))

        async def main() -> None:
            async with trio.open_nursery() as n:
                for i in range(6):
                    n.start_soon(trio.to_thread.run_sync, worker, i)

        # a loop other than the runtime's, like a module's own worker pool
        t = threading.Thread(target=trio.run, args=(main,))
        t.start()
        t.join(60)
        assert sorted(results) == sorted(bytes([i]) * 4096 for i in range(6))
        kcuda.detach()
        kt.fsck()
    finally:
        kcuda.detach()
        kt.stop()
