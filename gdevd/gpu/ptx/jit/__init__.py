"""The compiling PTX engine: kernels translated to C, compiled by the system compiler.

Tiers: a kernel runs on the interpreter until its compiled form is ready; ``start()``
compiles the module's kernels on a background thread, each loaded as soon as its own
compile ends (:mod:`.compiled`), and later launches of it run natively
(:class:`~.launch.JitLaunch`); kernels that launches want are compiled first.  The engine
policy (``set_engine``; the ``GDEV_PTX_ENGINE`` environment variable at start) is one of

* ``auto``   - tiered: compile in the background, use each kernel when ready (default);
* ``jit``    - a launch waits for its kernel's compile, then runs compiled;
* ``interp`` - never compile.

Without a C compiler every module stays on the interpreter, with one log line.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
from collections.abc import Hashable

from gdevd.errors import GdevError

from . import build
from .compiled import Compiled
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

    ``status``: ``interp`` (not compiled), ``compiling``, ``jit`` (every kernel the
    translator takes is ready), ``failed`` (the compiler failed for some: the others run
    compiled).  ``compiled`` exists from the start of a compile and fills as it goes.
    """

    def __init__(self, module, ptx: str) -> None:
        self.module, self.ptx = module, ptx
        self.status = "interp"
        self.seconds = 0.0
        self.error = ""
        self.compiled: Compiled | None = None
        self.owner: Hashable = None     # whom its compiler slots go to (jit/slots.py)
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._cancel = threading.Event()
        self._resume = False    # cancelled: the next launch starts the compile again

    def start(self, wait: bool = False, want: str | None = None,
              owner: Hashable = None) -> None:
        """Compile in the background (once, unless cancelled), kernel ``want`` first if
        given, for ``owner`` (the tenant whose load asked for it; the first one given
        stays); ``wait`` blocks until the compile is done, failed or cancelled."""
        global _warned
        with self._lock:
            if self.owner is None:
                self.owner = owner
            if self.status == "interp" and _engine != "interp":
                if build.compiler() is None:
                    if not _warned:
                        log.warning("no C compiler found: PTX kernels run on the interpreter")
                        _warned = True
                    return
                self.status = "compiling"
                self.compiled = Compiled()
                if want is not None:
                    self.compiled.want(want)
                self._cancel, self._done = threading.Event(), threading.Event()
                threading.Thread(target=self._compile,
                                 args=(self.compiled, self._cancel, self._done),
                                 name="gdev-jit-cc", daemon=True).start()
            done = self._done
        if wait and self.status == "compiling":
            done.wait()

    def cancel(self) -> None:
        """Stop a background compile (its compiler processes are killed): the module runs
        on the interpreter (``status`` ``interp`` again) until a launch asks for it, which
        starts the compile again (:meth:`runnable`).  Nothing happens to a module compiled
        or not compiling."""
        with self._lock:
            if self.status == "compiling":
                self._cancel.set()
                self._resume = True

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a compile that runs to end (ready, failed or cancelled); False if it
        still runs after ``timeout`` seconds."""
        return self.status != "compiling" or self._done.wait(timeout)

    def _compile(self, c: Compiled, cancel: threading.Event, done: threading.Event) -> None:
        try:
            build.build(self.module, self.ptx, cancel, into=c, owner=self.owner)
            self.status = "jit"
        except Cancelled:
            self.compiled, self.status = None, "interp"
        except Exception as exc:  # a compiler failure leaves its kernels on the interpreter
            log.exception("compiling module %s failed", self.module.name)
            self.error, self.status = repr(exc), "failed"
        finally:
            self.seconds = c.seconds
            done.set()

    def must_wait(self, kernel: str) -> bool:
        """Whether a launch of ``kernel`` would block in :meth:`runnable` now: the ``jit``
        policy and the kernel not yet compiled or rejected (the caller then runs
        :meth:`wait_kernel` off its event loop first)."""
        if _engine != "jit":
            return False
        c = self.compiled
        return c is None or not c.settled(kernel)

    def wait_kernel(self, kernel: str) -> None:
        """Block until ``kernel`` is compiled or rejected, or the build ends (starting it,
        kernel first, if it is not running): what :meth:`runnable` waits for under ``jit``."""
        self.start(want=kernel)
        c = self.compiled
        if c is not None:
            c.want(kernel)
            c.wait_for(kernel)

    def runnable(self, kernel: str) -> tuple[Compiled, str] | None:
        """(compiled module, C function) of ``kernel`` if it runs natively now, else None.
        Under the ``jit`` policy it waits for that kernel's compile (not the module's); a
        launch wants its kernel compiled next in any case."""
        if _engine == "interp":
            return None
        if _engine == "jit":
            self.wait_kernel(kernel)
        elif self._resume and self.status == "interp":
            self._resume = False
            self.start(want=kernel)
        c = self.compiled
        if c is None:
            return None
        c.want(kernel)
        fname = c.kernels.get(kernel)
        return (c, fname) if fname is not None else None

    def engine_of(self, kernel: str) -> str:
        """``jit`` or ``interp``: the engine a launch of ``kernel`` would use now."""
        c = self.compiled
        return "jit" if c is not None and kernel in c.kernels else "interp"
