"""Contexts and the per-thread current-context stack, plus the driver's shared core.

A CUcontext is one Gdev handle (``gopen`` of the device's vGPU minor) with its streams,
modules, events and allocations.  Current contexts are kept per thread in a stack, as in CUDA:
``cuCtxCreate`` pushes, ``cuCtxPopCurrent`` pops, ``cuCtxSetCurrent`` replaces the top.  A
context may be current in several threads at once; ``ctx.lock`` serializes the stream
bookkeeping of one context between those threads.
"""

from __future__ import annotations

import threading
from typing import Any

from .errors import CUresult, _gdev_error_types, api, fail
from .stream import Stream, is_not_ready

CU_CTX_SCHED_MASK = 0x07
CU_CTX_MAP_HOST = 0x08
CU_CTX_LMEM_RESIZE_TO_MAX = 0x10
_CTX_FLAGS = CU_CTX_SCHED_MASK | CU_CTX_MAP_HOST | CU_CTX_LMEM_RESIZE_TO_MAX
CUDA_API_VERSION = 3020  # cuCtxGetApiVersion, as Gdev reports


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
        except (OSError, _gdev_error_types()) as exc:
            if is_not_ready(exc):
                return False
            raise
        return True

    def synchronize(self) -> None:
        """Wait for all work of every stream, then a barrier on the handle (cuCtxSynchronize)."""
        with self.lock:
            self.null_stream.synchronize()
            self.backend.gbarrier(self.handle)

    def __repr__(self) -> str:
        state = " destroyed" if self.destroyed else ""
        return f"<CUcontext {id(self):#x} device={self.device}{state}>"


class DriverCore:
    """State shared by every part of the driver: backend, init flag, current-context stacks."""

    def __init__(self, backend: Any) -> None:
        self._backend_source = backend
        self.backend: Any = None
        self.initialized = False
        self.device_count = 0
        self.contexts: list[Context] = []
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


class ContextAPI:
    """cuCtx* entry points (mixed into the driver)."""

    @api
    def cuCtxCreate(self, flags: int, dev: int) -> Context:
        """Create a context on device ``dev`` (a Gdev handle on that vGPU) and make it current."""
        self._device(dev)  # type: ignore[attr-defined]
        if flags & ~_CTX_FLAGS:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"context flags {flags:#x}")
        handle = self.backend.gopen(dev)  # type: ignore[attr-defined]
        ctx = Context(self, dev, handle, flags)
        with self._lock:  # type: ignore[attr-defined]
            self.contexts.append(ctx)  # type: ignore[attr-defined]
        self._stack().append(ctx)  # type: ignore[attr-defined]
        return ctx

    @api
    def cuCtxDestroy(self, ctx: Context) -> None:
        """Destroy ``ctx``: wait for its work, free everything it holds, close its handle.

        It is removed from the calling thread's stack; in other threads it stays on the stack
        and any use reports CUDA_ERROR_CONTEXT_IS_DESTROYED.
        """
        ctx = self._context(ctx)  # type: ignore[attr-defined]
        with ctx.lock:
            try:
                ctx.null_stream.synchronize()
            except (OSError, _gdev_error_types()):
                pass  # a faulted context is destroyed all the same
            finally:
                ctx.destroyed = True
                with self._lock:  # type: ignore[attr-defined]
                    self.contexts.remove(ctx)  # type: ignore[attr-defined]
                stack = self._stack()  # type: ignore[attr-defined]
                stack[:] = [c for c in stack if c is not ctx]
                self.backend.gclose(ctx.handle)  # type: ignore[attr-defined]

    @api
    def cuCtxSynchronize(self) -> None:
        """Block until every operation of the current context has completed."""
        self._current().synchronize()  # type: ignore[attr-defined]

    @api
    def cuCtxPushCurrent(self, ctx: Context) -> None:
        """Push ``ctx`` onto the calling thread's current-context stack."""
        self._stack().append(self._context(ctx))  # type: ignore[attr-defined]

    @api
    def cuCtxPopCurrent(self) -> Context | None:
        """Pop and return the calling thread's current context (INVALID_CONTEXT if none)."""
        self._require_init()  # type: ignore[attr-defined]
        stack = self._stack()  # type: ignore[attr-defined]
        if not stack:
            raise fail(CUresult.CUDA_ERROR_INVALID_CONTEXT, "context stack is empty")
        return stack.pop()

    @api
    def cuCtxGetCurrent(self) -> Context | None:
        """The calling thread's current context, or None."""
        self._require_init()  # type: ignore[attr-defined]
        stack = self._stack()  # type: ignore[attr-defined]
        return stack[-1] if stack else None

    @api
    def cuCtxSetCurrent(self, ctx: Context | None) -> None:
        """Replace the top of the stack with ``ctx`` (None unbinds: pops the top)."""
        self._require_init()  # type: ignore[attr-defined]
        stack = self._stack()  # type: ignore[attr-defined]
        if ctx is None:
            if stack:
                stack.pop()
            return
        ctx = self._context(ctx)  # type: ignore[attr-defined]
        if stack:
            stack[-1] = ctx
        else:
            stack.append(ctx)

    @api
    def cuCtxGetDevice(self) -> int:
        """The device of the current context."""
        return self._current().device  # type: ignore[attr-defined]

    @api
    def cuCtxGetApiVersion(self, ctx: Context | None = None) -> int:
        """The API version of ``ctx`` (or the current context)."""
        if ctx is None:
            self._current()  # type: ignore[attr-defined]
        else:
            self._context(ctx)  # type: ignore[attr-defined]
        return CUDA_API_VERSION
