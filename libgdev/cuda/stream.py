"""Streams: CUDA's ordering domains mapped onto the context's in-order Gdev handle.

Theory of operation.  A context owns ONE Gdev handle, and the runtime runs a handle's work as
one in-order stream, like a Gdev channel: every copy and launch starts after everything the
handle was given before it (synchronous copies included).  Every CUDA stream of the context
issues to that handle, so any order CUDA asks for (within a stream, the legacy NULL stream
against blocking streams, cuStreamWaitEvent) already holds, and no host-side wait is needed
to issue work: launches and pinned copies return at once with a fence id.  The price is that
two streams of one context never overlap; contexts (and processes) do.

What a stream keeps is the fence of the last asynchronous operation issued in it: because
the handle is in order, that one fence completing means all of the stream's work (and all the
handle's work before it) is complete.  Fence ids are per-handle sequences that wrap at 4096;
an id reused by newer work makes a wait conservative, never early.
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Any

from .errors import CUresult, api, fail

if TYPE_CHECKING:
    from .context import Context

CU_STREAM_DEFAULT = 0x0
CU_STREAM_NON_BLOCKING = 0x1


class Stream:
    """A CUstream of a context; ``ctx.null_stream`` is the NULL stream."""

    def __init__(self, ctx: Context, flags: int = CU_STREAM_DEFAULT, null: bool = False) -> None:
        self.ctx = ctx
        self.flags = flags
        self.null = null
        self.last = 0  # fence of the newest asynchronous op issued here; 0 = none pending
        self.destroyed = False

    def record(self, fence: int) -> None:
        """Note that an op with ``fence`` was issued in this stream (0: already complete)."""
        if fence:
            self.last = fence

    def fences(self) -> list[int]:
        """The fences whose completion means this stream's work is complete."""
        if self.null:  # legacy NULL stream: also covers the work of every other stream
            return [s.last for s in self.ctx.all_streams() if s.last]
        return [self.last] if self.last else []

    def synchronize(self) -> None:
        """Block until the stream's work completed; device errors propagate."""
        for fence in self.fences():
            self.ctx.sync_fence(fence)
        self._forget()

    def idle(self) -> bool:
        """Whether the stream's work completed (never blocks; device errors propagate)."""
        if all(self.ctx.fence_done(f) for f in self.fences()):
            self._forget()
            return True
        return False

    def _forget(self) -> None:
        for s in self.ctx.all_streams() if self.null else [self]:
            s.last = 0

    def __repr__(self) -> str:
        return "<CUstream NULL>" if self.null else f"<CUstream {id(self):#x} flags={self.flags}>"


class StreamAPI:
    """cuStream* entry points (mixed into the driver)."""

    def _stream(self, hstream: Any) -> Stream:
        """Resolve a CUstream argument (None or 0 = NULL stream of the current context)."""
        ctx = self._current()  # type: ignore[attr-defined]
        if hstream is None or (isinstance(hstream, int) and hstream == 0):
            return ctx.null_stream
        if not isinstance(hstream, Stream) or hstream.destroyed or hstream.ctx is not ctx:
            raise fail(CUresult.CUDA_ERROR_INVALID_HANDLE, f"bad stream {hstream!r}")
        return hstream

    @api
    def cuStreamCreate(self, flags: int = 0) -> Stream:
        """Create a stream in the current context; ``flags`` 0 or CU_STREAM_NON_BLOCKING."""
        ctx = self._current()  # type: ignore[attr-defined]
        if flags & ~CU_STREAM_NON_BLOCKING:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"stream flags {flags:#x}")
        s = Stream(ctx, flags)
        with ctx.lock:
            ctx.streams.append(s)
        return s

    @api
    def cuStreamDestroy(self, hstream: Stream) -> None:
        """Destroy a stream; work already issued in it still completes."""
        s = self._stream(hstream)
        if s.null:
            raise fail(CUresult.CUDA_ERROR_INVALID_HANDLE, "cannot destroy the NULL stream")
        with s.ctx.lock:
            s.destroyed = True
            s.ctx.streams.remove(s)

    @api
    def cuStreamSynchronize(self, hstream: Any) -> None:
        """Block until all work issued in ``hstream`` has completed."""
        s = self._stream(hstream)
        with s.ctx.lock:
            s.synchronize()

    @api
    def cuStreamQuery(self, hstream: Any) -> None:
        """Return if the stream is idle, else raise CudaError(CUDA_ERROR_NOT_READY)."""
        s = self._stream(hstream)
        with s.ctx.lock:
            if not s.idle():
                raise fail(CUresult.CUDA_ERROR_NOT_READY, "stream has pending work")

    @api
    def cuStreamWaitEvent(self, hstream: Any, hevent: Any, flags: int = 0) -> None:
        """Make later work in ``hstream`` wait for the work captured by ``hevent``.

        Within one context this holds by construction (the handle is in order); an event of
        another context (another handle) is waited for on the host.
        """
        s = self._stream(hstream)
        ev = self._event(hevent)  # type: ignore[attr-defined]
        if flags != 0:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"flags {flags:#x}")
        if ev.ctx is not s.ctx:
            with ev.ctx.lock:
                ev.wait()


def is_not_ready(exc: BaseException) -> bool:
    """Whether a ``gsync`` poll failed only because its fence is still pending (ETIME).

    In-process a watchdog-killed kernel is a ``KernelFault`` (also ETIME) and is not "not
    ready"; through libgdev the two cannot be told apart, so a poll reports NOT_READY and the
    blocking wait (cuStreamSynchronize, cuEventSynchronize) reports CUDA_ERROR_LAUNCH_TIMEOUT.
    """
    return getattr(exc, "errno", None) == errno.ETIME and type(exc).__name__ != "KernelFault"
