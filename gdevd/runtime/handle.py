"""A context (Gdev's ``Ghandle``): an address space, bounce buffers, counters and a stream.

Theory of operation
-------------------
A handle composes its concerns: ``space`` (:class:`~.mm.addrspace.AddressSpace`: the page
table, VA range, mappings and apertures; ``handle.mmu`` and ``handle.lookup`` are its), the
``bounce`` buffers of pageable copies (:class:`~.bounce.BounceBuffers`), its ``counters``
(:class:`Counters`: copies per path, swap traffic) and, in the handle itself, its streams
and fences.  ``gpu`` is its device's record (allocator, swap area, ...).

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
raised by every later ``gsync``/``gbarrier``/``glaunch`` of this handle only, and, when a
kernel faulted (:meth:`Handle.check_kernel_fault`), by its synchronous copies (checked
again once the stream's earlier work is done: the results a faulted kernel left are not
handed out, as CUDA's memcpy after a kernel's fault fails), its ``gmalloc``/``gfree``
and the verbs that create (streams, modules, texture objects, VMM reservations, allocations
and mappings) too, as every call of a CUDA context after a kernel's fault fails; destroying
and closing still work, so the client can give everything back.
"""

from __future__ import annotations

import collections
import errno
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import trio

from ..errors import GdevError, KernelFault
from ..gpu.heap import HeapAllocator
from ..gpu.texture import TextureTable
from . import defaults as D
from .bounce import BounceBuffers
from .ipc import IpcContext
from .mm.addrspace import AddressSpace
from .mm.memory import MemObject
from .mm.swaparea import SwapCounters
from .mm.vmm import VmmSpace
from .printfbuf import PrintfBuffer
from .streams import LEGACY, Stream, Streams

if TYPE_CHECKING:
    from ..gpu.device import PhysicalGpu
    from .pergpu import Gpu
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


class Counters:
    """What a context did: copies and bytes per path (``copies["pinned"]``,
    ``copies["pinned_bytes"]``), its swap traffic, and the pinning operations since its last
    schedule point (the residency's PIN_BURST)."""

    __slots__ = ("copies", "swap", "unyielded_pins")

    def __init__(self) -> None:
        self.copies: collections.Counter[str] = collections.Counter()
        self.swap = SwapCounters()
        self.unyielded_pins = 0


class Handle:
    """An open context on a vGPU; create with ``gopen``, end with ``gclose``."""

    def __init__(self, system: GdevSystem, vgpu: VirtualGpu, cred: Credentials) -> None:
        self.system, self.vgpu, self.cred = system, vgpu, cred
        self.gpu: Gpu = vgpu.gpu            # the device's record (allocator, swap, ...)
        self.phys: PhysicalGpu = vgpu.phys
        self.cid = system.new_cid()
        self.space = AddressSpace(self.phys.vram.buffer, self.cid)
        self.mmu = self.space.mmu           # the same object, for the engines' hot paths
        self.vmm = VmmSpace(self.cid)       # reservations and allocation ids (api_vmm.py)
        self.ipc = IpcContext()             # CUDA IPC opens and event references (ipc.py)
        self.bounce = BounceBuffers(system.config.chunk_size, system.config.pipeline_count)
        self.counters = Counters()
        self.pending: dict[int, Fence] = {}
        self.streams = Streams()
        self.textures = TextureTable()      # texture objects, by opaque handle (api_tex.py)
        self.bounce_lock = trio.Lock()      # the bounce buffers: one pageable copy at a time
        self.fault: GdevError | None = None
        self.printf = PrintfBuffer(D.PRINTF_FIFO)   # what its kernels print (printfbuf.py)
        self.heap_limit = D.MALLOC_HEAP_SIZE    # its device heap's size (heap.py) ...
        self.heap: HeapAllocator | None = None  # ... reserved by the first kernel calling malloc
        self.heap_lock = trio.Lock()
        self.devrt_pending = D.DEVRT_PENDING        # parameter buffers per launch (devrt.py)
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

    def check_kernel_fault(self) -> None:
        """Raise the sticky error if a kernel of this context faulted (illegal address,
        trap, assert, watchdog): what copies check; a launch that failed for want of memory
        leaves the context's data readable."""
        if isinstance(self.fault, KernelFault):
            raise self.fault

    def lookup(self, va: int, size: int = 1, *, kind: int | None = None) -> MemObject:
        """The object containing ``[va, va + size)`` (:meth:`AddressSpace.lookup`)."""
        return self.space.lookup(va, size, kind=kind)

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
        self.streams.install(st, fence.done)
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
            self.streams.install(st, mine)
        try:
            for ev in deps:
                if not ev.is_set():     # (no checkpoint when nothing is pending: residency)
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
        state = "closed" if self.closed else f"{len(self.space.objects)} objects"
        return f"<Handle cid={self.cid} vgpu={self.vgpu.minor} {state}>"
