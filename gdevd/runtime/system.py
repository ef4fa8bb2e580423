"""The system: physical GPUs, virtual GPUs, the open contexts, and the invariant checker.

``async with GdevSystem(config) as system:`` builds the emulated machine, opens the nursery
that runs the contexts' asynchronous operations, and on exit closes every context still
open and stops the engines.  All of its state belongs to the trio loop that entered it.

Virtual GPUs carry Gdev's per-vGPU knobs (``memory_share``, ``compute_bandwidth``,
``memory_bandwidth`` in percent, ``period_us``); ``memory_size`` is derived from the share on
every read, so a /proc write to ``memory_share`` takes effect at the next allocation.  Shares
are percentages of the device memory outside the temporal swap area, so the default equal
shares (summing to 100 %) never overcommit the device.
"""

from __future__ import annotations

import dataclasses
import errno
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import trio

from ..errors import GdevError
from ..gpu.device import PhysicalGpu
from . import defaults as D
from .config import GdevConfig
from .invariants import check_system
from .ipc import IpcEventTable
from .mm.shm import ShmTable
from .mm.swap import migrator, shrink
from .mm.swaparea import SwapCounters
from .pergpu import Gpu
from .sched import Scheduler
from .teardown import gclose

if TYPE_CHECKING:
    from .handle import Handle


@dataclasses.dataclass(frozen=True)
class Credentials:
    """Who opened a context: the opener's uid, gid, pid and process name (the daemon takes
    them from FUSE and /proc; the name is for listings only)."""

    uid: int
    gid: int
    pid: int
    name: str = ""

    @classmethod
    def current(cls) -> Credentials:
        """The credentials of this process."""
        return cls(os.getuid(), os.getgid(), os.getpid(), _own_name())


def _own_name() -> str:
    """This process's name (``comm``), or "" where /proc cannot tell."""
    try:
        with open("/proc/self/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


class VirtualGpu:
    """A virtual GPU (``/dev/gdevN``): a share of one physical GPU."""

    def __init__(self, minor: int, gpu: Gpu, share: int, period_us: int) -> None:
        self.minor, self.gpu = minor, gpu
        self.phys: PhysicalGpu = gpu.phys
        self.memory_share = self.compute_bandwidth = self.memory_bandwidth = share
        self.period_us = period_us
        self.watchdog_ms = 0                # kernel run-time limit on this vGPU (0: none)
        self.guest = 0                      # 1: every context of this vGPU is a guest
        self.scheduler: Any = None          # the system's Scheduler (set by GdevSystem)
        self.memory_used = 0                # device bytes charged to this vGPU
        self.dma_used = 0                   # pinned host bytes charged to this vGPU
        self.handles: set[Handle] = set()
        self.swap = SwapCounters()          # swap statistics of the contexts on this vGPU
        self.system: GdevSystem | None = None

    @property
    def compute_bandwidth_used(self) -> int:
        """Measured compute utilisation over the scheduler's window, percent (0-100)."""
        return self._used("compute")

    @property
    def memory_bandwidth_used(self) -> int:
        """Measured copy-engine utilisation over the scheduler's window, percent (0-100)."""
        return self._used("memory")

    def _used(self, kind: str) -> int:
        if self.scheduler is None:
            return 0
        return round(self.scheduler.utilisation(self.scheduler.vres(self, kind)))

    @property
    def memory_size(self) -> int:
        """Device memory this vGPU may hold: its share of the physical memory outside the
        temporal swap area, in pages.  So shares summing to at most 100 % (the default)
        never overcommit the device: a vGPU's share is there for it whatever the others do."""
        usable = self.phys.memory_size - self.gpu.swap.device_size
        return usable * self.memory_share // 100 // D.PAGE_SIZE * D.PAGE_SIZE

    @property
    def dma_memory_size(self) -> int:
        """Pinned host memory this vGPU may hold: its share of the physical DMA pool."""
        return self.phys.dma_memory_size * self.memory_share // 100 // D.PAGE_SIZE * D.PAGE_SIZE

    def __repr__(self) -> str:
        return (f"<VirtualGpu {self.minor} on gpu{self.phys.index}: share {self.memory_share}%, "
                f"{self.memory_used}/{self.memory_size} bytes>")


class GdevSystem:
    """The emulated machine and the runtime state around it (see the module docstring)."""

    def __init__(self, config: GdevConfig | None = None) -> None:
        self.config = (config or GdevConfig()).validate()
        self.gpus: list[Gpu] = []                          # by physical index
        self.virtual: list[VirtualGpu] = []
        self.handles: dict[int, Handle] = {}               # cid -> open context
        self.scheduler = Scheduler(self)    # the seam every launch/copy uses
        self.module_loader: Callable[[str], Any] | None = None        # None: the PTX executor
        self.shm: Any = None                               # the shm segment table
        self.ipc_events = IpcEventTable()                  # interprocess events (ipc.py)
        self.admission: Any = None          # the ioctl socket's AdmissionStats, if served
        self.nursery: trio.Nursery | None = None
        self.token: trio.lowlevel.TrioToken | None = None
        self._next_cid = 1
        self._nursery_cm: Any = None

    async def __aenter__(self) -> GdevSystem:
        self._build()
        self.shm = ShmTable(self)
        self.token = trio.lowlevel.current_trio_token()
        self._nursery_cm = trio.open_nursery()
        self.nursery = await self._nursery_cm.__aenter__()
        for gpu in self.gpus:
            for completions in gpu.completions.values():
                self.nursery.start_soon(completions.run)
            self.nursery.start_soon(migrator, gpu.swap)
        return self

    @property
    def physical(self) -> list[PhysicalGpu]:
        """The physical GPUs (the hardware of ``gpus``), by index."""
        return [gpu.phys for gpu in self.gpus]

    async def __aexit__(self, *exc: object) -> bool | None:
        try:
            with trio.CancelScope(shield=True):
                for handle in list(self.handles.values()):
                    await gclose(handle)
        finally:
            assert self.nursery is not None
            self.nursery.cancel_scope.cancel()   # the completion tasks run until cancelled
            self.nursery = None
            try:
                result: bool | None = await self._nursery_cm.__aexit__(*exc)
            except BaseExceptionGroup as group:
                if exc[1] is None or list(group.exceptions) != [exc[1]]:
                    raise
                result = False  # the body's own exception: let it go on unwrapped
            finally:
                self._teardown()
        return result

    def _build(self) -> None:
        c = self.config
        try:
            for i in range(c.gpus):
                phys = PhysicalGpu(i, name=c.name, memory=c.memory, dma_memory=c.dma_memory,
                                   mp_count=c.mp_count, compute_capability=D.COMPUTE_CAPABILITY,
                                   compute_slice=c.compute_slice, decode_cache=D.DECODE_CACHE)
                try:
                    gpu = Gpu(phys, D.PAGE_SIZE, c.swap_percent, c.host_swap)
                except BaseException:
                    phys.close()
                    raise
                self.gpus.append(gpu)
                for _ in range(c.vgpus):
                    vgpu = VirtualGpu(len(self.virtual), gpu, 100 // c.vgpus, c.period_us)
                    vgpu.system, vgpu.scheduler = self, self.scheduler
                    self.virtual.append(vgpu)
        except BaseException:
            self._teardown()
            raise

    def _teardown(self) -> None:
        for gpu in self.gpus:
            gpu.phys.close()
        self.gpus.clear()

    def shrink(self, vgpu: VirtualGpu) -> None:
        """Swap out what ``vgpu`` holds beyond its (just shrunk) share, in the background."""
        if self.nursery is not None:
            self.nursery.start_soon(shrink, self, vgpu)

    def new_cid(self) -> int:
        """A context id never used before in this system."""
        cid, self._next_cid = self._next_cid, self._next_cid + 1
        return cid

    def priority_of(self, handle: Handle) -> int:
        """``handle``'s Gdev priority now (0-40, higher is more urgent), as the scheduler sees
        it: the opener's nice value and real-time policy, or a per-context override.  The memory
        manager picks swap victims by it."""
        return self.scheduler.entity(handle).prio.effective(trio.current_time())

    def vgpu(self, minor: int) -> VirtualGpu:
        """The vGPU ``minor``, or ``GdevError(ENODEV)``."""
        if isinstance(minor, bool) or not isinstance(minor, int) or \
                not 0 <= minor < len(self.virtual):
            raise GdevError(errno.ENODEV, f"no virtual GPU {minor!r}")
        return self.virtual[minor]

    def check_invariants(self) -> None:
        """Assert the memory manager's invariants (run at the end of every test, like fsck)."""
        check_system(self)
