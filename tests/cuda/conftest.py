"""Fixtures for the CUDA layer: a runtime on a kernel thread, and drivers bound to it.

``system`` runs a small GdevSystem in its own trio loop on a background thread (as the daemon
and ``gdevd.gdev`` do).  ``drv`` is a fresh ``CudaDriver`` over ``kcuda``'s facade of that
runtime (the in-daemon binding); ``any_drv`` runs a test once per binding that can run here.
Every test ends like an fsck: contexts destroyed, nothing left allocated, invariants hold.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from gdevd.runtime import GdevConfig, GdevSystem
from kcuda.facade import RuntimeFacade
from libgdev.cuda import CudaDriver, bind

MiB = 1 << 20
SMALL = dict(memory=64 * MiB, dma_memory=32 * MiB, vgpus=4, chunk_size=64 << 10,
             iowrite_limit=4096, ioread_limit=4096)
KERNELS = Path(__file__).resolve().parents[2] / "kernels"


class KernelThread:
    """A GdevSystem served by a trio loop on its own thread until ``stop()``."""

    def __init__(self, **config: Any) -> None:
        self.config = GdevConfig(**{**SMALL, **config})
        self.system: GdevSystem | None = None
        self.token: Any = None
        self._ready = threading.Event()
        self._stop: trio.Event | None = None
        self._thread = threading.Thread(target=trio.run, args=(self._main,), daemon=True)

    async def _main(self) -> None:
        async with GdevSystem(self.config) as system:
            self.system, self._stop = system, trio.Event()
            self.token = trio.lowlevel.current_trio_token()
            self._ready.set()
            await self._stop.wait()

    def start(self) -> KernelThread:
        self._thread.start()
        assert self._ready.wait(30), "the runtime did not start"
        return self

    def run_sync(self, fn: Any, *args: Any) -> Any:
        """Run ``fn(*args)`` on the loop's thread (where runtime state may be read)."""
        return trio.from_thread.run_sync(fn, *args, trio_token=self.token)

    def fsck(self) -> None:
        """No context left, nothing allocated, the memory manager's invariants hold."""
        def check() -> None:
            assert self.system is not None
            self.system.check_invariants()
            assert not self.system.handles, self.system.handles
            used = [(v.memory_used, v.dma_used) for v in self.system.virtual]
            assert all(u == (0, 0) for u in used), used
        self.run_sync(check)

    def stop(self) -> None:
        assert self._stop is not None
        trio.from_thread.run_sync(self._stop.set, trio_token=self.token)
        self._thread.join(30)


@pytest.fixture(scope="module")
def kernel_thread() -> Iterator[KernelThread]:
    kt = KernelThread().start()
    yield kt
    kt.stop()


@pytest.fixture
def drv(kernel_thread: KernelThread) -> Iterator[CudaDriver]:
    """An initialized driver over the runtime through kcuda's facade; fsck'ed afterwards."""
    d = bind(RuntimeFacade(kernel_thread.system, kernel_thread.token))
    d.cuInit(0)
    yield d
    d.shutdown()
    kernel_thread.fsck()


@pytest.fixture
def ctx(drv: CudaDriver) -> Any:
    """A context on device 0, current in the calling thread."""
    return drv.cuCtxCreate(0, drv.cuDeviceGet(0))
