"""The compute engine of one physical GPU: a thread that runs launches one at a time.

Theory of operation
-------------------
A GPU of this generation runs one context's grid at a time, so each physical GPU has one
engine thread and a FIFO of :class:`LaunchJob`.  A job wraps a *prepared* launch (the PTX
executor's ``mod.launch(...)`` object, or anything with ``run(budget) -> bool``).  The
thread resumes it in slices of ``slice_budget`` instruction steps; between two slices it
looks at the job's cancel flag (a closing context) and at :attr:`ComputeEngine.hold`, the
seam where a scheduler will stop the engine at a slice boundary.  When a job ends (done,
faulted or cancelled) the engine calls ``job.notify(job)`` on its own thread: the runtime
passes a function that forwards to its trio loop (``TrioToken.run_sync_soon``), which is the
completion "interrupt".  Nothing here knows about contexts, fences or trio.

Decoded modules are cached per physical GPU in a :class:`ModuleCache` keyed by a hash of
the module's bytes, so a module is parsed once however many contexts load it.
"""

from __future__ import annotations

import collections
import errno
import hashlib
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from ..errors import GdevError, KernelFault

log = logging.getLogger(__name__)


class Runnable(Protocol):
    """What the engine needs of a prepared launch (``gdevd.gpu.ptx``'s launch object)."""

    def run(self, budget: int | None = None) -> bool: ...


class LaunchJob:
    """One launch queued on an engine.  ``error`` is set when it did not finish cleanly."""

    def __init__(self, launch: Runnable, notify: Callable[[LaunchJob], None],
                 tag: Any = None) -> None:
        self.launch = launch
        self.notify = notify
        self.tag = tag                      # the runtime's own record (context, fence)
        self.error: GdevError | None = None
        self.cancelled = False
        self.started: float | None = None   # time.monotonic() stamps, for utilisation
        self.finished: float | None = None

    def cancel(self) -> None:
        """Ask the engine to drop this job at the next slice boundary (thread-safe)."""
        self.cancelled = True


class ComputeEngine:
    """One engine thread executing :class:`LaunchJob` in FIFO order, in budgeted slices."""

    def __init__(self, name: str, slice_budget: int) -> None:
        self.name = name
        self.slice_budget = slice_budget
        self.hold = threading.Event()       # set = keep running; cleared = pause at a boundary
        self.hold.set()
        self.launches = 0                   # jobs completed (any outcome)
        self.busy_s = 0.0                   # seconds spent running jobs
        self._queue: queue.SimpleQueue[LaunchJob | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name=f"gdev-{name}", daemon=True)
        self._closed = False
        self._thread.start()

    def submit(self, job: LaunchJob) -> None:
        """Queue ``job``; it runs after every job submitted before it."""
        if self._closed:
            raise GdevError(errno.ENODEV, f"compute engine {self.name} is closed")
        self._queue.put(job)

    def close(self) -> None:
        """Finish the queued jobs, stop the thread and join it.  Idempotent."""
        if not self._closed:
            self._closed = True
            self.hold.set()
            self._queue.put(None)
            self._thread.join()

    def _loop(self) -> None:
        while (job := self._queue.get()) is not None:
            job.started = time.monotonic()
            self._run(job)
            job.finished = time.monotonic()
            self.busy_s += job.finished - job.started
            self.launches += 1
            try:
                job.notify(job)
            except Exception:  # the runtime went away; nothing left to tell
                log.exception("%s: completion of a launch could not be delivered", self.name)

    def _run(self, job: LaunchJob) -> None:
        try:
            while True:
                self.hold.wait()
                if job.cancelled:
                    break
                if job.launch.run(self.slice_budget):
                    return
            job.error = GdevError(errno.ECANCELED, "launch cancelled: its context closed")
        except GdevError as e:
            job.error = e
        except Exception as e:  # an executor bug must not kill the engine or other contexts
            log.exception("%s: launch crashed the executor", self.name)
            job.error = KernelFault(errno.EIO, f"executor error: {e!r}")


class ModuleCache:
    """Decoded modules keyed by a hash of their bytes; least recently used evicted first."""

    def modules(self) -> list[Any]:
        """The cached modules, least recently used first (a snapshot)."""
        with self._lock:
            return list(self._mods.values())

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.hits = self.misses = 0
        self._lock = threading.Lock()
        self._mods: collections.OrderedDict[bytes, Any] = collections.OrderedDict()

    @staticmethod
    def key(code: bytes) -> bytes:
        """The cache key of a module's bytes."""
        return hashlib.blake2b(code, digest_size=20).digest()

    def lookup(self, key: bytes) -> Any | None:
        """The decoded module for ``key``, or None (counted as a miss)."""
        with self._lock:
            mod = self._mods.get(key)
            if mod is None:
                self.misses += 1
                return None
            self._mods.move_to_end(key)
            self.hits += 1
            return mod

    def insert(self, key: bytes, mod: Any) -> None:
        """Remember ``mod`` under ``key``, evicting the least recently used beyond capacity;
        a module that can be compiled to native code starts compiling (tiered engine)."""
        start = getattr(mod, "start_compile", None)
        if start is not None:
            start()
        with self._lock:
            self._mods[key] = mod
            self._mods.move_to_end(key)
            while len(self._mods) > self.capacity:
                self._mods.popitem(last=False)
