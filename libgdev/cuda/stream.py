"""Streams: CUDA's ordering domains, each a stream (a channel) of the context's Gdev handle.

Theory of operation.  A context owns ONE Gdev handle; the runtime gives a handle streams
(``gstream_create``; stream 0 is the legacy stream, CUDA's NULL stream), each an in-order
queue, ordered against each other as CUDA orders them: blocking streams against the legacy
stream, non-blocking ones against nothing but themselves (gdevd/runtime/streams.py).  Every
CUstream is one such stream, so kernels and copies of different streams overlap: launches
and pinned copies return at once with a fence id, and the daemon runs them side by side.
cuStreamWaitEvent orders a stream behind the fences an event captured (``gstream_wait``),
with no host-side wait; cuStreamSynchronize/Query wait for or poll the handle's stream.

What a stream keeps is the fence of the last asynchronous operation issued in it, which an
event recorded in it captures: because the stream is in order, that one fence completing
means all of the stream's work before it is complete.  Fence ids are per-handle sequences
that wrap at 4096; an id reused by newer work makes a wait conservative, never early.
"""

from __future__ import annotations

from typing import Any

from .core import CU_STREAM_DEFAULT, CU_STREAM_NON_BLOCKING, DriverCore, Stream
from .errors import CUresult, api, fail

__all__ = ["CU_STREAM_DEFAULT", "CU_STREAM_NON_BLOCKING", "Stream", "StreamAPI"]


class StreamAPI(DriverCore):
    """cuStream* entry points (mixed into the driver)."""

    def _stream(self, hstream: Any) -> Stream:
        """Resolve a CUstream argument (None or 0 = NULL stream of the current context)."""
        ctx = self._current()
        if hstream is None or (isinstance(hstream, int) and hstream == 0):
            return ctx.null_stream
        if not isinstance(hstream, Stream) or hstream.destroyed or hstream.ctx is not ctx:
            raise fail(CUresult.CUDA_ERROR_INVALID_HANDLE, f"bad stream {hstream!r}")
        return hstream

    @api
    def cuStreamCreate(self, flags: int = 0) -> Stream:
        """Create a stream in the current context; ``flags`` 0 or CU_STREAM_NON_BLOCKING."""
        ctx = self._current()
        if flags & ~CU_STREAM_NON_BLOCKING:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"stream flags {flags:#x}")
        with ctx.lock:
            s = Stream(ctx, flags, sid=int(ctx.backend.gstream_create(ctx.handle, flags)))
            ctx.streams.append(s)
        return s

    @api
    def cuStreamDestroy(self, hstream: Stream) -> None:
        """Destroy a stream; work already issued in it still completes."""
        s = self._stream(hstream)
        if s.null:
            raise fail(CUresult.CUDA_ERROR_INVALID_HANDLE, "cannot destroy the NULL stream")
        with s.ctx.lock:
            s.ctx.backend.gstream_destroy(s.ctx.handle, s.sid)
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

        Within one context the handle's stream is ordered behind the event's fences (no
        host wait); an event of another context (another handle) is waited for on the host.
        """
        s = self._stream(hstream)
        ev = self._event(hevent)
        if flags != 0:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"flags {flags:#x}")
        if ev.ctx is not s.ctx:
            with ev.ctx.lock:
                ev.wait()
            return
        with s.ctx.lock:
            if ev.ipc:                      # an interprocess event: ordered in the daemon
                s.ctx.backend.gipc_event_wait(s.ctx.handle, s.sid, ev.ipc)
            for fence in ev.fences:
                s.ctx.backend.gstream_wait(s.ctx.handle, s.sid, fence)
