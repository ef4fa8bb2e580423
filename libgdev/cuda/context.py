"""cuCtx*: contexts and the calling thread's current-context stack (see ``core.py``)."""

from __future__ import annotations

from .core import Context, DriverCore
from .errors import CUresult, api, fail

CU_CTX_SCHED_MASK = 0x07
CU_CTX_MAP_HOST = 0x08
CU_CTX_LMEM_RESIZE_TO_MAX = 0x10
_CTX_FLAGS = CU_CTX_SCHED_MASK | CU_CTX_MAP_HOST | CU_CTX_LMEM_RESIZE_TO_MAX
CUDA_API_VERSION = 3020  # cuCtxGetApiVersion, as Gdev reports
CU_FUNC_CACHE_PREFER_NONE, CU_FUNC_CACHE_PREFER_SHARED = 0x00, 0x01
CU_FUNC_CACHE_PREFER_L1, CU_FUNC_CACHE_PREFER_EQUAL = 0x02, 0x03


class ContextAPI(DriverCore):
    """cuCtx* entry points (mixed into the driver)."""

    @api
    def cuCtxCreate(self, flags: int, dev: int) -> Context:
        """Create a context on device ``dev`` (a Gdev handle on that vGPU) and make it current."""
        self._device(dev)
        if flags & ~_CTX_FLAGS:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"context flags {flags:#x}")
        handle = self.backend.gopen(dev)
        ctx = Context(self, dev, handle, flags)
        with self._lock:
            self.contexts.append(ctx)
        self._stack().append(ctx)
        return ctx

    @api
    def cuCtxDestroy(self, ctx: Context) -> None:
        """Destroy ``ctx``: wait for its work, free everything it holds, close its handle.

        It is removed from the calling thread's stack; in other threads it stays on the stack
        and any use reports CUDA_ERROR_CONTEXT_IS_DESTROYED.
        """
        ctx = self._context(ctx)
        with ctx.lock:
            try:
                ctx.backend.gbarrier(ctx.handle)
            except OSError:
                pass  # a faulted context is destroyed all the same
            finally:
                ctx.flush_printf()
                ctx.destroyed = True
                with self._lock:
                    self.contexts.remove(ctx)
                stack = self._stack()
                stack[:] = [c for c in stack if c is not ctx]
                self.backend.gclose(ctx.handle)

    @api
    def cuCtxSynchronize(self) -> None:
        """Block until every operation of the current context has completed."""
        self._current().synchronize()

    @api
    def cuCtxPushCurrent(self, ctx: Context) -> None:
        """Push ``ctx`` onto the calling thread's current-context stack."""
        self._stack().append(self._context(ctx))

    @api
    def cuCtxPopCurrent(self) -> Context | None:
        """Pop and return the calling thread's current context (INVALID_CONTEXT if none)."""
        self._require_init()
        stack = self._stack()
        if not stack:
            raise fail(CUresult.CUDA_ERROR_INVALID_CONTEXT, "context stack is empty")
        return stack.pop()

    @api
    def cuCtxGetCurrent(self) -> Context | None:
        """The calling thread's current context, or None."""
        self._require_init()
        stack = self._stack()
        return stack[-1] if stack else None

    @api
    def cuCtxSetCurrent(self, ctx: Context | None) -> None:
        """Replace the top of the stack with ``ctx`` (None unbinds: pops the top)."""
        self._require_init()
        stack = self._stack()
        if ctx is None:
            if stack:
                stack.pop()
            return
        ctx = self._context(ctx)
        if stack:
            stack[-1] = ctx
        else:
            stack.append(ctx)

    @api
    def cuCtxGetDevice(self) -> int:
        """The device of the current context."""
        return self._current().device

    @api
    def cuCtxGetApiVersion(self, ctx: Context | None = None) -> int:
        """The API version of ``ctx`` (or the current context)."""
        if ctx is None:
            self._current()
        else:
            self._context(ctx)
        return CUDA_API_VERSION

    @api
    def cuCtxGetCacheConfig(self) -> int:
        """The current context's preferred L1/shared split (a CU_FUNC_CACHE_* value)."""
        return int(self._current().cache_config)

    @api
    def cuCtxSetCacheConfig(self, config: int) -> None:
        """Set the preferred L1/shared split.  The emulated GPU has no L1 to trade, so it is
        a recorded preference that changes no behaviour (as in Gdev, which stores it)."""
        if config not in range(CU_FUNC_CACHE_PREFER_EQUAL + 1):
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"cache config {config!r}")
        self._current().cache_config = config


class PriorityAPI(DriverCore):
    """Gdev's extensions to the driver API: a context's scheduling priority and its guest
    class (docs/scheduling.md).

    Priorities are Gdev's 0-40, higher is more urgent (docs/scheduling.md); by default a
    context has its opening process's priority (from nice and real-time priority).
    """

    @api
    def cuCtxSetPriority(self, ctx: Context | None, priority: int | None) -> int:
        """Override the priority of ``ctx`` (None: the current context); ``priority`` None
        clears the override.  Returns the effective priority.  CUDA_ERROR_INVALID_VALUE
        outside 0..40, CUDA_ERROR_NOT_PERMITTED to raise it above the task's own without
        root, CUDA_ERROR_NOT_SUPPORTED if the backend has no priorities."""
        ctx = self._current() if ctx is None else self._context(ctx)
        if priority is not None and (isinstance(priority, bool) or
                                     not isinstance(priority, int) or
                                     not 0 <= priority <= 40):
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"priority {priority!r}")
        return int(self._priority_verb("gset_priority")(ctx.handle, priority))

    @api
    def cuCtxGetPriority(self, ctx: Context | None = None) -> int:
        """The effective priority of ``ctx`` (None: the current context)."""
        ctx = self._current() if ctx is None else self._context(ctx)
        return int(self._priority_verb("gget_priority")(ctx.handle))

    @api
    def cuCtxSetGuest(self, ctx: Context | None, guest: bool | None) -> bool:
        """Make ``ctx`` (None: the current context) a guest of the daemon's guest class
        (True: it runs in the hosts' idle cycles), a host again (False), or (None) what its
        opener's policy and vGPU say; whether it is a guest now.  CUDA_ERROR_NOT_PERMITTED
        to make a SCHED_IDLE opener's or a guest vGPU's context a host without root,
        CUDA_ERROR_INVALID_VALUE for anything but a bool or None, CUDA_ERROR_NOT_SUPPORTED
        if the backend has no guest class."""
        ctx = self._current() if ctx is None else self._context(ctx)
        if guest is not None and not isinstance(guest, bool):
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"guest {guest!r}")
        return bool(self._priority_verb("gset_guest")(ctx.handle, guest))

    @api
    def cuCtxGetGuest(self, ctx: Context | None = None) -> bool:
        """Whether ``ctx`` (None: the current context) is a guest now."""
        ctx = self._current() if ctx is None else self._context(ctx)
        return bool(self._priority_verb("gget_guest")(ctx.handle))

    def _priority_verb(self, name: str):  # type: ignore[no-untyped-def]
        verb = getattr(getattr(self.backend, "ns", self.backend), name, None)
        if verb is None:
            raise fail(CUresult.CUDA_ERROR_NOT_SUPPORTED, f"the backend has no {name}")
        return verb
