"""Fixtures for the CUDA layer: a runtime on a kernel thread, and drivers bound to it.

``kernel_thread`` runs a small GdevSystem in its own trio loop on a background thread (as the
daemon and ``gdevd.gdev`` do).  ``drv`` is a fresh ``CudaDriver`` over ``kcuda``'s facade of
that runtime.  ``kcuda_driver``, ``libgdev_driver`` (through a real gdevd mount) and
``inprocess_driver`` (``gdevd.gdev``) are the three bindings (``BINDINGS``), module-scoped.
Every test ends like an fsck: contexts destroyed, nothing left allocated, invariants hold.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

import kcuda
from gdevd.facade import RuntimeFacade
from gdevd.runtime import GdevConfig, GdevSystem
from libgdev.cuda import CudaDriver, bind

MiB = 1 << 20
#: a quarter of SMALL's 64 MiB outside its 10 % temporal swap area, in pages (docs/memory.md)
VGPU_MEM = (64 * MiB - 64 * MiB // 10 // 4096 * 4096) // 4 // 4096 * 4096
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


def _daemon_fixture_module() -> Any:
    path = Path(__file__).resolve().parents[1] / "daemon" / "conftest.py"
    spec = importlib.util.spec_from_file_location("gdevd_mount_fixture", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def kcuda_driver() -> Iterator[Any]:
    """The real ``kcuda`` module attached to a runtime running on its own trio thread."""
    kt = KernelThread().start()
    kcuda.attach(kt.system, kt.token)
    try:
        kcuda.cuInit(0)
        yield kcuda.driver
        kcuda.detach()
        kt.fsck()
    finally:
        kcuda.detach()
        kt.stop()


@pytest.fixture(scope="module")
def libgdev_driver() -> Iterator[Any]:
    """``libgdev.cuda`` over a real gdevd mount (a separate daemon process)."""
    import libgdev

    mount = _daemon_fixture_module()
    d = mount.start_gdevd()
    try:
        drv = bind(lambda: _mounted(libgdev, d.mount))
        drv.cuInit(0)
        drv.mount = d.mount  # type: ignore[attr-defined]  # for tests that start clients
        yield drv
        drv.shutdown()
    finally:
        mount.stop_gdevd(d)


def _mounted(libgdev: Any, mount: str) -> Any:
    from libgdev.cuda import ModuleBackend

    class Mounted:
        """libgdev's verbs on one mount point (not the $GDEV_MOUNT default)."""

        GdevKernel = libgdev.GdevKernel

        def __getattr__(self, name: str) -> Any:
            return getattr(libgdev, name)

        def gopen(self, minor: int) -> Any:
            return libgdev.gopen(minor, mount)

        def gdevice_count(self) -> int:
            return libgdev.gdevice_count(mount)

    return ModuleBackend(Mounted())


@pytest.fixture(scope="module")
def inprocess_driver() -> Iterator[Any]:
    """``libgdev.cuda.bind(gdevd.gdev)``: the driver over the in-process runtime facade."""
    from gdevd import gdev
    from gdevd.runtime import GdevConfig


    gdev.boot(GdevConfig(**SMALL))
    try:
        drv = bind(gdev)
        drv.cuInit(0)
        yield drv
        drv.shutdown()
        gdev.check_invariants()
    finally:
        gdev.shutdown()


BINDINGS = ["kcuda_driver", "libgdev_driver", "inprocess_driver"]
