"""The driver's shared core: contexts, streams, and the per-thread current-context stacks.

A CUcontext is one Gdev handle (``gopen`` of the device's vGPU minor) with its streams,
modules, events and allocations.  Current contexts are kept per thread in a stack, as in CUDA:
``cuCtxCreate`` pushes, ``cuCtxPopCurrent`` pops, ``cuCtxSetCurrent`` replaces the top.  A
context may be current in several threads at once; ``ctx.lock`` serializes the bookkeeping of
one context between those threads.  How streams map onto the handle: see ``stream.py``.
"""

from __future__ import annotations

import errno
import sys
import threading
from typing import TYPE_CHECKING, Any

from .errors import CUresult, fail

if TYPE_CHECKING:
    from .device import DeviceInfo

CU_STREAM_DEFAULT = 0x0
CU_STREAM_NON_BLOCKING = 0x1


class Stream:
    """A CUstream of a context; ``ctx.null_stream`` is the NULL stream.  ``sid`` is its
    stream of the Gdev handle (0, the legacy stream, for the NULL stream)."""

    def __init__(self, ctx: Context, flags: int = CU_STREAM_DEFAULT, null: bool = False,
                 sid: int = 0) -> None:
        self.ctx = ctx
        self.flags = flags
        self.null = null
        self.sid = sid
        self.last = 0  # fence of the newest asynchronous op issued here; 0 = none pending
        self.destroyed = False

    def record(self, fence: int) -> None:
        """Note that an op with ``fence`` was issued in this stream (0: already complete)."""
        if fence:
            self.last = fence

    def fences(self) -> list[int]:
        """The fences whose completion means this stream's work is complete (the NULL
        stream's also cover the blocking streams', as CUDA's legacy stream does)."""
        if self.null:
            return [s.last for s in self.ctx.all_streams()
                    if s.last and not s.flags & CU_STREAM_NON_BLOCKING]
        return [self.last] if self.last else []

    def synchronize(self) -> None:
        """Block until the stream's work completed; device errors propagate.  What kernels
        printed is written out then (Context.flush_printf)."""
        try:
            self.ctx.backend.gstream_sync(self.ctx.handle, self.sid)
        finally:
            self.ctx.flush_printf()

    def idle(self) -> bool:
        """Whether the stream's work completed (never blocks; device errors propagate)."""
        try:
            self.ctx.backend.gstream_sync(self.ctx.handle, self.sid, 0)
        except OSError as exc:
            if is_not_ready(exc):
                return False
            raise
        return True

    def __repr__(self) -> str:
        return "<CUstream NULL>" if self.null else f"<CUstream {id(self):#x} flags={self.flags}>"


class Context:
    """A CUcontext: one Gdev handle on one device, with everything created in it."""

    def __init__(self, driver: Any, device: int, handle: Any, flags: int) -> None:
        self.driver = driver
        self.backend = driver.backend
        self.device = device
        self.handle = handle
        self.flags = flags
        self.lock = threading.RLock()
        self.null_stream = Stream(self, null=True)
        self.streams: list[Stream] = []
        self.modules: list[Any] = []
        self.events: list[Any] = []
        self.mem: dict[int, int] = {}  # device allocations: addr -> size
        self.host: dict[int, Any] = {}  # pinned: id(array) -> (array, Gdev's DMA buffer)
        self.scratch: dict[str, Any] = {}  # per-context helpers (event slots, marker kernel)
        self.cache_config = 0  # CU_FUNC_CACHE_PREFER_NONE; a preference only
        self.printf_pending = False  # a kernel that prints was launched since the last flush
        self.destroyed = False

    def all_streams(self) -> list[Stream]:
        """The NULL stream and every live stream."""
        return [self.null_stream, *self.streams]

    def sync_fence(self, fence: int) -> None:
        """Block until ``fence`` of this context's handle has completed (errors propagate)."""
        if fence:
            self.backend.gsync(self.handle, fence, None)

    def fence_done(self, fence: int) -> bool:
        """Whether ``fence`` completed; a pending fence is False, a device fault raises."""
        if not fence:
            return True
        try:
            self.backend.gsync(self.handle, fence, 0)
        except OSError as exc:
            if is_not_ready(exc):
                return False
            raise
        return True

    def synchronize(self) -> None:
        """Wait for all work of the context, every stream's (cuCtxSynchronize): one barrier
        on its handle; then what its kernels printed is written out."""
        with self.lock:
            try:
                self.backend.gbarrier(self.handle)
            finally:
                self.flush_printf()

    def flush_printf(self) -> None:
        """Write what this context's kernels printed (device printf) to this process's
        stdout, as CUDA's runtime does at a synchronization, a blocking copy, a module unload
        or the context's end.  Only after a launch of a kernel that prints (its table's
        ``prints``): no round trip otherwise.  A failure to fetch it is not the caller's
        error (the synchronization's own result stands)."""
        if not self.printf_pending or self.destroyed:
            return
        self.printf_pending = False
        try:
            data = self.backend.gprintf_drain(self.handle)
        except OSError:
            return
        if data:
            write_stdout(data)

    def __repr__(self) -> str:
        state = " destroyed" if self.destroyed else ""
        return f"<CUcontext {id(self):#x} device={self.device}{state}>"


def write_stdout(data: bytes) -> None:
    """``data`` on sys.stdout, after what Python itself has buffered there."""
    out = sys.stdout
    if out is None:
        return
    out.flush()
    raw = getattr(out, "buffer", None)
    if raw is not None:
        raw.write(data)
        raw.flush()
    else:
        out.write(data.decode("utf-8", "replace"))
        out.flush()


class DriverCore:
    """State shared by every part of the driver: backend, init flag, current-context stacks."""

    def __init__(self, backend: Any) -> None:
        self._backend_source = backend
        self.backend: Any = None
        self.initialized = False
        self.device_count = 0
        self.contexts: list[Context] = []
        self._device_info: dict[int, DeviceInfo] = {}  # by ordinal, when probed
        self._tls = threading.local()
        self._lock = threading.RLock()

    def _stack(self) -> list[Context]:
        stack = getattr(self._tls, "stack", None)
        if stack is None:
            stack = self._tls.stack = []
        return stack

    def _require_init(self) -> None:
        if not self.initialized:
            raise fail(CUresult.CUDA_ERROR_NOT_INITIALIZED, "call cuInit(0) first")

    def _current(self) -> Context:
        """The calling thread's current context, or CUDA_ERROR_INVALID_CONTEXT."""
        self._require_init()
        stack = self._stack()
        if not stack:
            raise fail(CUresult.CUDA_ERROR_INVALID_CONTEXT, "no current context")
        ctx = stack[-1]
        if ctx.destroyed:
            raise fail(CUresult.CUDA_ERROR_CONTEXT_IS_DESTROYED, repr(ctx))
        return ctx

    def _context(self, ctx: Any) -> Context:
        """Validate a CUcontext argument."""
        self._require_init()
        if not isinstance(ctx, Context) or ctx.driver is not self or ctx.destroyed:
            raise fail(CUresult.CUDA_ERROR_INVALID_CONTEXT, f"bad context {ctx!r}")
        return ctx

    if TYPE_CHECKING:  # resolvers of the other parts, for the type checker
        def _device(self, dev: Any) -> int: ...
        def _stream(self, hstream: Any) -> Stream: ...
        def _event(self, hevent: Any) -> Any: ...
        def _module(self, hmod: Any) -> Any: ...
        def _load(self, image: Any, name: str) -> Any: ...
        def _launch(self, f: Any, grid: Any, block: Any, shared: int, hstream: Any,
                    params: bytes) -> int: ...
        def cuModuleGetFunction(self, hmod: Any, name: str) -> Any: ...
        def _resolve_backend(self) -> Any: ...


def is_not_ready(exc: BaseException) -> bool:
    """Whether a ``gsync`` poll failed only because its fence is still pending (ETIME).

    In-process a watchdog-killed kernel is a ``KernelFault`` (also ETIME) and is not "not
    ready"; through libgdev the two cannot be told apart, so a poll reports NOT_READY and the
    blocking wait (cuStreamSynchronize, cuEventSynchronize) reports CUDA_ERROR_LAUNCH_TIMEOUT.
    """
    return getattr(exc, "errno", None) == errno.ETIME and type(exc).__name__ != "KernelFault"
