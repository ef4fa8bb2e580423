"""The compiling PTX engine: kernels translated to C, compiled by the system compiler.

Tiers: a module runs on the interpreter until its compiled form is ready; ``start()``
compiles it on a background thread, and later launches of each translated kernel run
natively (:class:`~.launch.JitLaunch`).  The engine policy (``set_engine``; the
``GDEV_PTX_ENGINE`` environment variable at start) is one of

* ``auto``   - tiered: compile in the background, use the result when ready (default);
* ``jit``    - compile before the first launch (it waits), then run compiled;
* ``interp`` - never compile.

Without a C compiler every module stays on the interpreter, with one log line.
"""

from __future__ import annotations

import errno
import logging
import os
import threading

from gdevd.errors import GdevError

from . import build
from .jobs import Cancelled

log = logging.getLogger(__name__)
ENGINES = ("auto", "jit", "interp")
_engine = os.environ.get("GDEV_PTX_ENGINE", "auto")
_warned = False


def set_engine(name: str) -> None:
    """Select the engine policy for modules loaded or launched from now on (see above)."""
    global _engine
    if name not in ENGINES:
        raise GdevError(errno.EINVAL, f"engine must be one of {', '.join(ENGINES)}")
    _engine = name


def engine() -> str:
    """The current engine policy."""
    return _engine


def set_compile_nice(value: int) -> None:
    """Run the compiler processes started from now on at niceness ``value`` (0..19; the
    background compiler then takes idle cycles from running kernels, not their time)."""
    build.set_nice(value)


def compile_nice() -> int:
    """The niceness the compiler runs at."""
    return build.nice()


class JitState:
    """The compiled form of one module: status, compile seconds, per-kernel functions.

    ``status``: ``interp`` (not compiled), ``compiling``, ``jit`` (ready), ``failed``.
    """

    def __init__(self, module, ptx: str) -> None:
        self.module, self.ptx = module, ptx
        self.status = "interp"
        self.seconds = 0.0
        self.error = ""
        self.compiled: build.Compiled | None = None
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._cancel = threading.Event()

    def start(self, wait: bool = False) -> None:
        """Compile in the background (once, unless cancelled); ``wait`` blocks until it is
        ready, failed or cancelled."""
        global _warned
        with self._lock:
            if self.status == "interp" and _engine != "interp":
                if build.compiler() is None:
                    if not _warned:
                        log.warning("no C compiler found: PTX kernels run on the interpreter")
                        _warned = True
                    return
                self.status = "compiling"
                self._cancel, self._done = threading.Event(), threading.Event()
                threading.Thread(target=self._compile, args=(self._cancel, self._done),
                                 name="gdev-jit-cc", daemon=True).start()
            done = self._done
        if wait and self.status == "compiling":
            done.wait()

    def cancel(self) -> None:
        """Stop a background compile (its compiler processes are killed): the module stays
        on the interpreter (``status`` ``interp`` again, so :meth:`start` may compile it
        later).  Nothing happens to a module compiled or not compiling."""
        self._cancel.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a compile that runs to end (ready, failed or cancelled); False if it
        still runs after ``timeout`` seconds."""
        return self.status != "compiling" or self._done.wait(timeout)

    def _compile(self, cancel: threading.Event, done: threading.Event) -> None:
        try:
            self.compiled = build.build(self.module, self.ptx, cancel)
            self.seconds = self.compiled.seconds
            self.status = "jit"
        except Cancelled:
            self.status = "interp"
        except Exception as exc:  # a compiler failure leaves the interpreter serving
            log.exception("compiling module %s failed", self.module.name)
            self.error, self.status = repr(exc), "failed"
        finally:
            done.set()

    def function(self, kernel: str) -> str | None:
        """The compiled function of ``kernel`` if it can run natively now, else None."""
        if _engine == "interp":
            return None
        if _engine == "jit":
            self.start(wait=True)
        c = self.compiled
        return c.kernels.get(kernel) if c is not None and self.status == "jit" else None

    def engine_of(self, kernel: str) -> str:
        """``jit`` or ``interp``: the engine a launch of ``kernel`` would use now."""
        c = self.compiled
        return "jit" if c is not None and self.status == "jit" and kernel in c.kernels \
            else "interp"
