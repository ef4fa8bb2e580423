"""The synchronous in-process Gdev API, for scripts and tests.

The same verbs as :mod:`gdevd.runtime`, without ``await``::

    from gdevd import gdev
    with gdev.gopen(0) as h:                  # boots the default system on first use
        va = gdev.gmalloc(h, 1 << 20)
        gdev.gmemcpy_to_device(h, va, data, data.nbytes)

The runtime is owned by one trio loop; here that loop runs on a background "kernel thread"
(``gdev.boot(config)`` starts it explicitly, ``gdev.shutdown()`` stops it, closing every
context still open) and each call is forwarded to that loop by :class:`.facade.RuntimeFacade`
(the one sync face of the runtime).  Errors are the runtime's :class:`~gdevd.errors.GdevError`;
calling from inside that loop is a RuntimeError.
"""

from __future__ import annotations

import errno
import functools
import threading
from collections.abc import Callable
from typing import Any

import trio

from libgdev.verbs import HANDLE_VERBS

from . import runtime as rt
from .errors import GdevError
from .facade import RuntimeFacade
from .runtime import constants as _constants
from .runtime.constants import *  # noqa: F403  (Gdev's GDEV_* names)
from .runtime.system import Credentials, GdevSystem

GdevConfig = rt.GdevConfig
GdevKernel = rt.GdevKernel
DmaBuffer = rt.DmaBuffer


class _KernelThread:
    """A thread running one GdevSystem in its own trio loop until stopped."""

    def __init__(self, config: rt.GdevConfig | None) -> None:
        self.config = config
        self.system: GdevSystem | None = None
        self.token: trio.lowlevel.TrioToken | None = None
        self.facade: RuntimeFacade | None = None    # set once the system runs
        self._stop: trio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.thread = threading.Thread(target=trio.run, args=(self._main,),
                                       name="gdev-kernel", daemon=True)

    def start(self) -> GdevSystem:
        self.thread.start()
        self._ready.wait()
        if self._error is not None:
            self.thread.join()
            raise self._error
        assert self.system is not None
        return self.system

    async def _main(self) -> None:
        try:
            async with GdevSystem(self.config) as system:
                self.system, self._stop = system, trio.Event()
                self.token = trio.lowlevel.current_trio_token()
                self.facade = RuntimeFacade(system, self.token)
                self._ready.set()
                await self._stop.wait()
        except BaseException as e:  # reported to start(); the thread then ends
            self._error = e
            self._ready.set()
            if self.system is not None:
                raise

    def stop(self) -> None:
        assert self._stop is not None
        trio.from_thread.run_sync(self._stop.set, trio_token=self.token)
        self.thread.join()


_lock = threading.Lock()
_kernel: _KernelThread | None = None


def boot(config: rt.GdevConfig | None = None) -> GdevSystem:
    """Start the kernel thread with ``config`` (default machine if None); return its system.

    ``GdevError(EBUSY)`` if one is running already (``shutdown()`` first).
    """
    global _kernel
    with _lock:
        if _kernel is not None:
            raise GdevError(errno.EBUSY, "gdev is already booted; shutdown() first")
        kernel = _KernelThread(config)
        system = kernel.start()
        _kernel = kernel
        return system


def shutdown() -> None:
    """Close every context, stop the engines and the kernel thread (no-op if not booted)."""
    global _kernel
    with _lock:
        kernel, _kernel = _kernel, None
    if kernel is not None:
        kernel.stop()


def system() -> GdevSystem:
    """The running system, booting the default one if needed."""
    return _running().system  # type: ignore[return-value]


def _running() -> _KernelThread:
    if _kernel is None:
        try:
            boot()
        except GdevError as e:
            if e.errno != errno.EBUSY:
                raise
    assert _kernel is not None
    return _kernel


def _facade() -> RuntimeFacade:
    """The running system's sync facade, booting the default system if needed."""
    facade = _running().facade
    assert facade is not None
    return facade


class Handle:
    """A context opened by :func:`gopen`; a context manager that closes it."""

    def __init__(self, handle: rt.Handle) -> None:
        self.handle = handle

    def __enter__(self) -> Handle:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.handle.closed:
            _facade().call(rt.gclose, self.handle)

    def __repr__(self) -> str:
        return f"<gdev.Handle {self.handle!r}>"


def _unwrap(x: Any) -> Any:
    return x.handle if isinstance(x, Handle) else x


def _verb(name: str) -> Callable[..., Any]:
    @functools.wraps(getattr(rt, name))
    def verb(*args: Any, **kw: Any) -> Any:
        return getattr(_facade(), name)(*map(_unwrap, args), **kw)
    return verb


def gopen(minor: int = 0, cred: Credentials | None = None) -> Handle:
    """Open a context on vGPU ``minor`` of the running system (booting it if needed)."""
    return Handle(_facade().gopen(minor, cred))


def gdevice_count() -> int:
    """The number of virtual GPUs of the running system."""
    return _facade().gdevice_count()


def check_invariants() -> None:
    """Run the system's invariant checker in its loop."""
    async def check() -> None:
        system().check_invariants()
    _facade().call(check)


for _name in HANDLE_VERBS:  # Gdev's verbs, one per facade verb (libgdev.verbs)
    globals()[_name] = _verb(_name)
del _name

__all__ = [
    "boot", "shutdown", "system", "check_invariants", "Handle", "GdevConfig", "GdevKernel",
    "DmaBuffer", "Credentials", "gopen", "gdevice_count", *HANDLE_VERBS,
    *[n for n in dir(_constants) if n.startswith("GDEV_")],
]
