"""Events (cuEvent*), timestamped by the emulated device.

A real GPU records an event by a semaphore release that the GPU itself stamps with its clock
when the release reaches the head of the stream.  Here the same happens with a one-thread
marker kernel that reads the device's ``%globaltimer`` and stores it in the event's 8-byte slot
of device memory.  It is launched in the event's stream like any kernel, so it runs after the
work issued before it in that stream (each stream is in order, see ``stream.py``), and the
time is the emulated device's, taken when the stream reached the event, not at a later host
sync: events of two streams time their overlap.

Events created with CU_EVENT_DISABLE_TIMING launch nothing: they only capture the fences of
the work before them, for cuEventQuery/cuEventSynchronize/cuStreamWaitEvent.  An
interprocess event (CU_EVENT_INTERPROCESS, which needs CU_EVENT_DISABLE_TIMING; ``ipc.py``)
lives in the daemon instead (``gipc_event_*``), so that every process holding it sees every
holder's last record.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .core import DriverCore, is_not_ready
from .errors import CUresult, api, check_sticky, fail

CU_EVENT_DEFAULT = 0x0
CU_EVENT_BLOCKING_SYNC = 0x1
CU_EVENT_DISABLE_TIMING = 0x2
CU_EVENT_INTERPROCESS = 0x4
SLOT_PAGE = 4096  # bytes of device memory per slot page: 512 events

MARKER_NAME = "gdev_event_record"
MARKER_PTX = f"""\
.version 7.0
.target sm_75
.address_size 64

.visible .entry {MARKER_NAME}(
    .param .u64 slot
)
{{
    .reg .b64 %rd<4>;

    ld.param.u64 %rd1, [slot];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u64 %rd3, %globaltimer;
    st.global.u64 [%rd2], %rd3;
    ret;
}}
"""


class SlotPool:
    """8-byte timestamp slots in device memory of one context, a page at a time."""

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        self.free: list[int] = []
        self.pages: list[int] = []

    def get(self) -> int:
        """A free slot's device address (allocates a page when none is left)."""
        if not self.free:
            page = int(self.ctx.backend.gmalloc(self.ctx.handle, SLOT_PAGE))
            self.pages.append(page)
            self.free = [page + off for off in range(SLOT_PAGE - 8, -1, -8)]
        return self.free.pop()

    def put(self, slot: int) -> None:
        """Return a slot (its event's marker has completed)."""
        self.free.append(slot)


class Event:
    """A CUevent: the fences of the work before it, and its device timestamp slot."""

    def __init__(self, ctx: Any, flags: int) -> None:
        self.ctx = ctx
        self.flags = flags
        self.fences: list[int] = []
        self.slot = 0
        self.recorded = False
        self.destroyed = False
        self.ipc = 0                        # an interprocess event's id in the daemon
        self.ipc_handle = b""               # ... and its 64-byte handle (ipc.py)

    def __repr__(self) -> str:
        state = "recorded" if self.recorded else "unrecorded"
        return f"<CUevent {id(self):#x} flags={self.flags:#x} {state}>"

    @property
    def timing(self) -> bool:
        """Whether the event takes timestamps."""
        return not self.flags & CU_EVENT_DISABLE_TIMING

    def done(self) -> bool:
        """Whether every captured fence completed (drops those that did)."""
        if self.ipc:
            try:
                self.ctx.backend.gipc_event_sync(self.ctx.handle, self.ipc, 0)
            except OSError as exc:
                if is_not_ready(exc):
                    return False
                raise
            return True
        self.fences = [f for f in self.fences if not self.ctx.fence_done(f)]
        return not self.fences

    def wait(self) -> None:
        """Block until every captured fence completed."""
        if self.ipc:
            self.ctx.backend.gipc_event_sync(self.ctx.handle, self.ipc)
        while self.fences:
            self.ctx.sync_fence(self.fences[0])
            self.fences.pop(0)

    def timestamp(self) -> int:
        """The device time (ns) stored by the marker; the event must be complete."""
        out = np.zeros(1, dtype=np.uint64)
        self.ctx.backend.gmemcpy_from_device(self.ctx.handle, out, self.slot, 8)
        return int(out[0])


def _marker(ctx: Any, driver: Any) -> Any:
    """The context's marker kernel (its module is loaded on first use)."""
    fn = ctx.scratch.get("marker")
    if fn is None:
        mod = driver._load(MARKER_PTX, "<gdev event marker>")
        ctx.modules.remove(mod)  # internal: freed with the handle, not by the user
        fn = ctx.scratch["marker"] = driver.cuModuleGetFunction(mod, MARKER_NAME)
    return fn


class EventAPI(DriverCore):
    """cuEvent* entry points (mixed into the driver)."""

    def _event(self, hevent: Any) -> Event:
        self._require_init()
        if not isinstance(hevent, Event) or hevent.destroyed or hevent.ctx.destroyed:
            raise fail(CUresult.CUDA_ERROR_INVALID_HANDLE, f"bad event {hevent!r}")
        return hevent

    @api
    def cuEventCreate(self, flags: int = CU_EVENT_DEFAULT) -> Event:
        """Create an event in the current context (the context's sticky error once a kernel
        of it faulted)."""
        ctx = self._current()
        check_sticky(self)
        if flags & ~(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS) \
                or flags & CU_EVENT_INTERPROCESS and not flags & CU_EVENT_DISABLE_TIMING:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"event flags {flags:#x}")
        ev = Event(ctx, flags)
        if flags & CU_EVENT_INTERPROCESS:
            ev.ipc_handle = bytes(ctx.backend.gipc_event_new(ctx.handle))
            ev.ipc = int.from_bytes(ev.ipc_handle[8:12], "little")
        if ev.timing:
            pool = ctx.scratch.setdefault("slots", SlotPool(ctx))
            ev.slot = pool.get()
        ctx.events.append(ev)
        return ev

    @api
    def cuEventRecord(self, hevent: Any, hstream: Any = None) -> None:
        """Record the event in ``hstream``: it completes when the work before it has."""
        ev = self._event(hevent)
        s = self._stream(hstream)
        if s.ctx is not ev.ctx:
            raise fail(CUresult.CUDA_ERROR_INVALID_HANDLE, "event and stream contexts differ")
        with s.ctx.lock:
            if ev.ipc:
                s.ctx.backend.gipc_event_record(s.ctx.handle, ev.ipc, s.sid)
                ev.recorded = True
                return
            if ev.timing:
                fn = _marker(s.ctx, self)
                self._launch(fn, (1, 1, 1), (1, 1, 1), 0, hstream,
                             ev.slot.to_bytes(8, "little"))
            ev.fences = s.fences()
            ev.recorded = True

    @api
    def cuEventQuery(self, hevent: Any) -> None:
        """Return if the event completed (or was never recorded), else raise NOT_READY."""
        ev = self._event(hevent)
        with ev.ctx.lock:
            if not ev.done():
                raise fail(CUresult.CUDA_ERROR_NOT_READY, "event pending")

    @api
    def cuEventSynchronize(self, hevent: Any) -> None:
        """Block until the event completed."""
        ev = self._event(hevent)
        with ev.ctx.lock:
            try:
                ev.wait()
            finally:
                ev.ctx.flush_printf()

    @api
    def cuEventElapsedTime(self, hstart: Any, hend: Any) -> float:
        """Milliseconds of device time between two completed, timed events."""
        start, end = self._event(hstart), self._event(hend)
        for ev in (start, end):
            if not ev.timing or not ev.recorded:
                raise fail(CUresult.CUDA_ERROR_INVALID_HANDLE, f"{ev!r} has no timestamp")
            with ev.ctx.lock:
                if not ev.done():
                    raise fail(CUresult.CUDA_ERROR_NOT_READY, "event pending")
        return (end.timestamp() - start.timestamp()) / 1e6

    @api
    def cuEventDestroy(self, hevent: Any) -> None:
        """Destroy the event (after its marker, if any, has landed; an interprocess event
        at once: its daemon record lives on while another holder has it)."""
        ev = self._event(hevent)
        with ev.ctx.lock:
            try:
                if not ev.ipc:
                    ev.wait()
            finally:
                ev.ctx.flush_printf()
            ev.destroyed = True
            ev.ctx.events.remove(ev)
            if ev.ipc:
                ev.ctx.backend.gipc_event_close(ev.ctx.handle, ev.ipc)
            if ev.slot:
                ev.ctx.scratch["slots"].put(ev.slot)
