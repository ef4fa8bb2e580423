"""A context (Gdev's ``Ghandle``): an address space, its objects, bounce buffers and fences.

Theory of operation
-------------------
Each handle owns an :class:`~gdevd.gpu.mmu.Mmu` (aperture 0 = its GPU's VRAM, apertures
1..63 = its pinned buffers), a VA allocator over Gdev's user range, its mappings, its bounce
buffers (``chunk_size * pipeline_count`` bytes) and a fence counter.

**Ordering.**  A handle has streams (``streams.py``): the legacy stream 0 and the ones
``gstream_create`` made, each an in-order queue like a Gdev channel, ordered against each
other only as CUDA orders them.  An asynchronous operation (:meth:`enqueue`) captures the
events it depends on, installs its completion event as its stream's new tail, and runs as a
task in the system nursery once those events are set.  A synchronous operation takes its
stream with :meth:`exclusive` the same way and releases it when done; ``exclusive(None)``
takes *every* stream (frees, re-tuning the bounce buffers), so no engine touches a page
after it was freed.  Copies through the bounce buffers hold :attr:`bounce_lock` (two streams
never share them at once).  All of it is trio-loop state; the only checkpoints are the
awaits shown.

**Fences.**  Async operations get Gdev fence ids: a per-context sequence that wraps from
4095 to 1; 0 is reserved (``gsync(h, 0)`` returns at once).  A failed asynchronous operation
(a kernel fault, an engine error) makes the context *faulted*: the error is sticky and is
raised by every later ``gsync``/``gbarrier``/``glaunch`` of this handle only.
"""

from __future__ import annotations

import collections
import errno
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
import trio

from ..errors import GdevError
from ..gpu.hostpages import huge_buffer
from ..gpu.mmu import Mmu
from . import defaults as D
from .allocator import ExtentAllocator
from .memory import DmaBlock, MemObject, ObjectMap
from .streams import LEGACY, Stream, Streams
from .swaparea import SwapCounters

if TYPE_CHECKING:
    from ..gpu.device import PhysicalGpu
    from .system import Credentials, GdevSystem, VirtualGpu


def check_handle(handle: object) -> Handle:
    """``handle`` if it is an open :class:`Handle`; else ``GdevError(EBADF)``."""
    if not isinstance(handle, Handle):
        raise GdevError(errno.EBADF, f"not a Gdev handle: {type(handle).__name__}")
    handle.check_open()
    return handle


class Fence:
    """One asynchronous operation of a handle: ``id``, ``done`` event, ``error`` if it failed."""

    __slots__ = ("id", "kind", "done", "error", "job")

    def __init__(self, fid: int, kind: str) -> None:
        self.id, self.kind = fid, kind
        self.done = trio.Event()
        self.error: GdevError | None = None
        self.job: Any = None                # the compute engine's LaunchJob, for cancelling


class Handle:
    """An open context on a vGPU; create with ``gopen``, end with ``gclose``."""

    def __init__(self, system: GdevSystem, vgpu: VirtualGpu, cred: Credentials) -> None:
        self.system, self.vgpu, self.cred = system, vgpu, cred
        self.phys: PhysicalGpu = vgpu.phys
        self.cid = system.new_cid()
        self.swap = SwapCounters()          # this context's swap statistics
        self.mmu = Mmu()
        self.mmu.set_aperture(0, self.phys.vram.buffer)
        self.vas = ExtentAllocator(D.VAS_USER_START, D.VAS_USER_END - D.VAS_USER_START,
                                   D.PAGE_SIZE)
        self.objects = ObjectMap()
        self.free_apertures = list(range(D.DMA_APERTURES, 0, -1))
        self.chunk_size = self.pipeline_count = 0
        self._bounce_raw = self.bounce = np.empty(0, dtype=np.uint8)
        self._bounce_base = 0
        self.set_bounce(system.config.chunk_size, system.config.pipeline_count)
        self.copy_stats: collections.Counter[str] = collections.Counter()
        self.unyielded_pins = 0   # pinning operations since a schedule point (residency)
        self.pending: dict[int, Fence] = {}
        self.streams = Streams()
        self.bounce_lock = trio.Lock()      # the bounce buffers: one pageable copy at a time
        self.fault: GdevError | None = None
        self.closed = False
        self._seq = 0

    def check_open(self) -> None:
        """Raise ``GdevError(EBADF)`` if the handle was closed."""
        if self.closed:
            raise GdevError(errno.EBADF, f"context {self.cid} is closed")

    def check_fault(self) -> None:
        """Raise the sticky error of a faulted context (see the module docstring)."""
        if self.fault is not None:
            raise self.fault

    # --- bounce buffers -------------------------------------------------------------------

    def set_bounce(self, chunk: int, depth: int) -> None:
        """(Re)allocate ``depth`` bounce buffers of ``chunk`` bytes (pages touched lazily)."""
        raw = huge_buffer(chunk * depth + 2 * D.PAGE_SIZE if chunk else 0)
        self._bounce_raw, self._bounce_base = raw, -raw.ctypes.data % D.PAGE_SIZE
        self.chunk_size, self.pipeline_count = chunk, depth
        self.bounce = self.bounce_at(0)

    def bounce_at(self, offset: int) -> np.ndarray:
        """The bounce buffers starting ``offset`` (0..4095) bytes into a page."""
        start = self._bounce_base + offset
        return self._bounce_raw[start:start + self.chunk_size * self.pipeline_count]

    def bounce_for(self, src_addr: int, dst_addr: int) -> np.ndarray:
        """Bounce buffers placed for a two-stage copy from ``src_addr`` to ``dst_addr``.

        memcpy on some CPUs (measured: AMD EPYC, glibc) runs 3-4x slower when the
        destination sits a few bytes past the source modulo the page size, which is
        exactly where a large numpy array (16 bytes into a page) lands against a
        page-aligned one.  The slots are placed so that both stages have a relative page
        offset in [2048, 4096), where copies run at full speed.
        """
        gap = (dst_addr - src_addr) % D.PAGE_SIZE
        return self.bounce_at((src_addr + (gap + D.PAGE_SIZE) // 2) % D.PAGE_SIZE)

    # --- objects --------------------------------------------------------------------------

    def lookup(self, va: int, size: int = 1, *, kind: int | None = None) -> MemObject:
        """The object containing ``[va, va + size)``.

        ``GdevError(ENOENT)`` if no object of this context (of ``kind``, if given) contains
        ``va``; ``GdevError(EFAULT)`` if the range runs past the object's end.
        """
        if isinstance(va, bool) or not isinstance(va, int):
            raise GdevError(errno.EINVAL, f"address must be an integer: {va!r}")
        obj = self.objects.find(va)
        if obj is None or (kind is not None and obj.kind != kind):
            raise GdevError(errno.ENOENT, f"no object at {va:#x} in context {self.cid}")
        if not obj.covers(va, size):
            raise GdevError(errno.EFAULT, f"{va:#x}+{size:#x} runs past the end of {obj}")
        return obj

    def find_pinned(self, address: int, size: int) -> MemObject | None:
        """The pinned buffer of this context holding host ``[address, address + size)``."""
        for obj in self.objects.pinned:
            if isinstance(obj.block, DmaBlock) and obj.block.contains(address, size):
                return obj
        return None

    # --- the stream -----------------------------------------------------------------------

    def next_fence_id(self) -> int:
        """The next fence id (1..FENCE_COUNT-1, wrapping); EAGAIN if it is still in flight."""
        self._seq = 1 if self._seq >= D.FENCE_COUNT - 1 else self._seq + 1
        if self._seq in self.pending:
            raise GdevError(errno.EAGAIN, "every fence id of this context is in flight")
        return self._seq

    def enqueue(self, kind: str, op: Callable[[Fence], Awaitable[None]],
                stream: int = LEGACY) -> Fence:
        """Run ``op(fence)`` after the work ``stream`` orders it behind; return its fence at
        once.  EINVAL for an unknown stream."""
        st = self.streams.get(stream)
        fence = Fence(self.next_fence_id(), kind)
        deps = self.streams.deps(st)
        st.tail = fence.done
        self.pending[fence.id] = fence
        assert self.system.nursery is not None
        self.system.nursery.start_soon(self._run_op, deps, fence, op)
        return fence

    async def _run_op(self, deps: list[trio.Event], fence: Fence,
                      op: Callable[[Fence], Awaitable[None]]) -> None:
        try:
            for ev in deps:
                await ev.wait()
            if self.closed:
                raise GdevError(errno.ECANCELED, "context closed before the operation ran")
            await op(fence)
        except GdevError as e:
            fence.error = e
            if e.errno != errno.ECANCELED and self.fault is None:
                self.fault = e
        finally:
            self.pending.pop(fence.id, None)
            fence.done.set()

    @asynccontextmanager
    async def exclusive(self, stream: int | None = None) -> AsyncIterator[None]:
        """Hold ``stream`` (None: every stream) for a synchronous operation: wait for the
        work it is ordered behind, keep the work issued later in it out until done."""
        await trio.lowlevel.checkpoint_if_cancelled()
        mine = trio.Event()
        held: list[Stream]
        if stream is None:
            deps, held = self.streams.tails(), self.streams.all()
        else:
            st = self.streams.get(stream)
            deps, held = self.streams.deps(st), [st]
        for st in held:
            st.tail = mine
        try:
            for ev in deps:
                await ev.wait()
            yield
        finally:
            mine.set()

    async def drain(self) -> None:
        """Wait until every operation issued so far, on every stream, has finished."""
        while tails := self.streams.tails():
            await tails[0].wait()

    def cancel_pending(self) -> None:
        """Ask the compute engine to drop this context's queued and running launches."""
        for fence in self.pending.values():
            if fence.job is not None:
                fence.job.cancel()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{len(self.objects)} objects"
        return f"<Handle cid={self.cid} vgpu={self.vgpu.minor} {state}>"
