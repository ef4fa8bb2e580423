"""The compute engine of one physical GPU: a thread that runs one context's launches.

Theory of operation
-------------------
A GPU of this generation runs one context's grids at a time, but the grids of one context's
streams side by side, so each physical GPU has one engine thread and a FIFO of
:class:`LaunchJob`.  A job wraps a *prepared* launch (the PTX executor's
``mod.launch(...)`` object, or anything with ``run(budget) -> bool``).  The thread resumes
it in quanta of about a millisecond (the budget of instruction steps adapts to the kernel's
width).  Jobs of the same ``group`` (the runtime passes the context) that are submitted
while one of them runs join the *running set* and take quanta in turn, so their blocks
interleave (two streams' kernels overlap); a job of another group waits until the running
set is empty, then it and the queued jobs of its group form the next set.  Jobs without a
group run alone, in FIFO order.  Before each quantum the thread looks at
:attr:`ComputeEngine.hold` (a seam for tests), the job's cancel flag (a closing context, or
the engine closing), its watchdog and its preemption flag (the scheduler's request to yield
the engine: the job is left *suspended*, resumable by submitting it again).  When a job
stops for any of these reasons the engine calls ``job.notify(job)`` on its own thread: the
runtime passes a function that forwards to its trio loop (``TrioToken.run_sync_soon``),
which is the completion "interrupt".  Nothing here knows about contexts, fences, policies
or trio.

The engine's thread (and the compiled engine's threads that help it, jit/team.h) runs
ENGINE_NICE nicer than the daemon: the emulated GPU computes on the CPUs that also serve
every tenant's calls, and a real GPU's kernels leave those CPUs to the OS: the daemon's
other threads preempt the engine's when they have work, which cuts the tail latency of
other tenants' calls while kernels keep every CPU busy (docs/scheduling.md,
scripts/bench/control_latency.py); the kernel loses nothing when nothing else runs.

Decoded modules are cached per physical GPU in a :class:`ModuleCache` keyed by a hash of
the module's bytes, so a module is parsed once however many contexts load it.
"""

from __future__ import annotations

import collections
import errno
import hashlib
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Hashable
from typing import Any, Protocol

from ..errors import GdevError, KernelFault

log = logging.getLogger(__name__)

FIRST_BUDGET = 16       # instruction steps of a job's first quantum (one step may be 128 Ki lanes)
LEARNED_MAX = 256       # kernels whose last budget the engine remembers
ENGINE_NICE = 5         # how much nicer than the daemon the engine's threads run (default)
NICE_MAX = 19


def _niceness() -> int:
    """The calling thread's niceness."""
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


class Runnable(Protocol):
    """What the engine needs of a prepared launch (``gdevd.gpu.ptx``'s launch object).

    Optional attributes the engine reads with a default: ``budget_scale`` (int, 1: how many
    of this launch's steps weigh one step of ``slice_budget``: a compiled step costs far
    less than an interpreted one) and ``budget_key`` (hashable or None: launches with equal
    keys, the same kernel and shape, start from the budget the last one ended with).
    """

    def run(self, budget: int | None = None) -> bool: ...


class LaunchJob:
    """One launch queued on an engine.  ``error`` is set when it did not finish cleanly.

    The engine runs it until it is done, faulted, cancelled, killed by its watchdog
    (``limit_s`` seconds of run time, None = no limit: ETIME) or asked to yield
    (``preempt``, then ``suspended`` is True and the job may be submitted again to resume).
    ``run_s`` counts only the time it ran, never the time it spent suspended.
    """

    def __init__(self, launch: Runnable, notify: Callable[[LaunchJob], None],
                 tag: Any = None, limit_s: float | None = None, group: Any = None) -> None:
        self.launch = launch
        self.notify = notify
        self.tag = tag                      # the runtime's own record (context, fence)
        self.group = group                  # jobs of one group may run together (None: alone)
        self.limit_s = limit_s
        self.error: GdevError | None = None
        self.cancelled = False
        self.preempt = False                # set by the scheduler: yield at the next quantum
        self.suspended = False              # set by the engine: yielded, not finished
        self.run_s = 0.0                    # seconds run so far, over every slice
        self.slices = 0                     # times it was given the engine
        self.budget = 0                     # instruction steps per quantum (adapted)
        self.started: float | None = None   # time.monotonic() stamps of the last slice
        self.finished: float | None = None

    def cancel(self) -> None:
        """Ask the engine to drop this job at the next quantum boundary (thread-safe)."""
        self.cancelled = True


class ComputeEngine:
    """One engine thread executing :class:`LaunchJob` in short quanta: one group's jobs in
    turn, the groups in FIFO order (see the module docstring).

    A quantum is one ``run(budget)`` call; the budget (instruction steps) is adapted per
    job so that a quantum takes about ``quantum_s`` whatever the width of the kernel's
    waves, at most ``slice_budget`` times the launch's ``budget_scale``; a launch with a
    ``budget_key`` starts from the budget the last launch of that key ended with, so a
    kernel launched again does not ramp up from FIRST_BUDGET in tiny quanta.  Before each
    quantum the engine looks at, in order: the hold seam, cancellation (ECANCELED), the
    watchdog (ETIME), a preemption request.
    """

    def __init__(self, name: str, slice_budget: int, quantum_s: float = 0.001) -> None:
        self.name = name
        self.slice_budget = slice_budget
        self.quantum_s = quantum_s
        self.hold = threading.Event()       # set = keep running; cleared = pause at a boundary
        self.hold.set()
        self.launches = 0                   # jobs ended (any outcome but suspension)
        self.busy_s = 0.0                   # seconds spent running jobs
        self.overlapped = 0                 # jobs that joined a running set (ran beside one)
        self.current: LaunchJob | None = None   # the job of the quantum running now
        # invariant: every job of _running has the group of _running[0], never None unless
        # it is the only one; _later holds the jobs of other groups in submission order.
        self._running: list[LaunchJob] = []
        self._later: collections.deque[LaunchJob] = collections.deque()
        self._turn = 0
        # budget_key -> the last budget of a launch of that key; only the engine thread
        # touches it (no lock), at most LEARNED_MAX entries, least recently used dropped
        self._learned: collections.OrderedDict[Any, int] = collections.OrderedDict()
        self._queue: queue.SimpleQueue[LaunchJob | None] = queue.SimpleQueue()
        self._base_nice = _niceness()       # the daemon's: the engine runs `nice` above it
        self.nice = ENGINE_NICE
        self._thread = threading.Thread(target=self._loop, name=f"gdev-{name}", daemon=True)
        self._closed = False
        self._thread.start()

    def set_nice(self, delta: int) -> None:
        """Run the engine's thread ``delta`` (0..19) nicer than the daemon from now on (the
        compiled engine's helpers follow it at its next slice); capped at niceness 19.
        GdevError(EPERM) if the system refuses, as it does a less nice value to a process
        without CAP_SYS_NICE."""
        if not 0 <= delta <= NICE_MAX:
            raise GdevError(errno.EINVAL, f"compute niceness {delta} outside [0, {NICE_MAX}]")
        tid = self._thread.native_id
        if tid is None:             # not started: its thread applies self.nice first thing
            self.nice = delta
            return
        try:
            os.setpriority(os.PRIO_PROCESS, tid, min(NICE_MAX, self._base_nice + delta))
        except OSError as exc:
            raise GdevError(errno.EPERM, f"the compute engine's thread cannot be made "
                                         f"{delta} nicer than the daemon: {exc.strerror} "
                                         "(a less nice value needs CAP_SYS_NICE)") from None
        self.nice = delta

    def submit(self, job: LaunchJob) -> None:
        """Queue ``job`` (new or suspended): it joins the running set if that is of its
        group, else it runs after every group submitted before it."""
        if self._closed:
            raise GdevError(errno.ENODEV, f"compute engine {self.name} is closed")
        job.suspended = False
        self._queue.put(job)

    def close(self) -> None:
        """Cancel the running and queued jobs (ECANCELED), stop the thread, join it.
        Idempotent; returns within one quantum of the running job."""
        if not self._closed:
            self._closed = True
            self.hold.set()
            self._queue.put(None)
            self._thread.join()

    def _loop(self) -> None:
        try:
            self.set_nice(self.nice)
        except GdevError as exc:    # (only ever nicer than the daemon: the system allows it)
            log.warning("%s: %s", self.name, exc.detail)
        stopping = False
        while True:
            idle = not self._running and not self._later
            stopping = self._take(block=idle and not stopping) or stopping
            if not self._running:
                if stopping:
                    return
                continue
            self._turn %= len(self._running)
            job = self._running[self._turn]
            self.current = job
            stopped = self._step(job)
            self.current = None
            if stopped:
                self._running.remove(job)
                self._finish(job)
            else:
                self._turn += 1

    def _take(self, block: bool) -> bool:
        """Move submitted jobs into the running set or behind it (blocking for the first
        one when ``block``); True once the close marker was seen."""
        closing = False
        while True:
            try:
                job = self._queue.get(block=block)
            except queue.Empty:
                break
            block = False
            if job is None:
                closing = True
            elif self._running and (job.group is None or
                                    job.group is not self._running[0].group):
                self._later.append(job)
            else:
                self._start(job)
        if not self._running and self._later:
            first = self._later.popleft()
            self._start(first)
            if first.group is not None:
                for job in [j for j in self._later if j.group is first.group]:
                    self._later.remove(job)
                    self._start(job)
        return closing

    def _start(self, job: LaunchJob) -> None:
        if self._running:
            self.overlapped += 1
        job.started = time.monotonic()
        job.slices += 1
        self._running.append(job)

    def _finish(self, job: LaunchJob) -> None:
        job.finished = time.monotonic()
        if not job.suspended:
            self.launches += 1
        try:
            job.notify(job)
        except Exception:  # the runtime went away; nothing left to tell
            log.exception("%s: completion of a launch could not be delivered", self.name)

    def _step(self, job: LaunchJob) -> bool:
        """Give ``job`` one quantum unless it must stop first; True once it stopped."""
        try:
            self.hold.wait()
            if job.cancelled or self._closed:
                why = "its context closed" if job.cancelled else "the GPU is shutting down"
                job.error = GdevError(errno.ECANCELED, f"launch cancelled: {why}")
                return True
            if job.limit_s is not None and job.run_s >= job.limit_s:
                job.error = KernelFault(errno.ETIME, f"watchdog: kernel ran longer than "
                                                     f"{job.limit_s:g} s")
                return True
            if job.preempt:
                job.preempt, job.suspended = False, True
                return True
            return self._quantum(job)
        except GdevError as e:
            job.error = e
        except Exception as e:  # an executor bug must not kill the engine or other contexts
            log.exception("%s: launch crashed the executor", self.name)
            job.error = KernelFault(errno.EIO, f"executor error: {e!r}")
        return True

    def _quantum(self, job: LaunchJob) -> bool:
        """Run one quantum of ``job``; True once it is done.  The budget starts small (or
        where the last launch of the same ``budget_key`` left it) and is scaled by
        ``quantum_s`` over the quantum's duration (growing at most twofold), never above the
        cap (``slice_budget`` scaled for the launch)."""
        cap = self.slice_budget * max(1, int(getattr(job.launch, "budget_scale", 1)))
        key = getattr(job.launch, "budget_key", None)
        budget = min(cap, job.budget or self._learned.get(key) or FIRST_BUDGET)
        t0 = time.monotonic()
        done = job.launch.run(budget)
        dt = time.monotonic() - t0
        job.run_s += dt
        self.busy_s += dt
        if dt > self.quantum_s:
            budget = max(1, int(budget * self.quantum_s / dt))
        elif not done:  # toward quantum_s, at most doubling (a step's cost is noisy)
            budget = min(cap, budget * 2, max(budget, int(budget * self.quantum_s / max(dt, 1e-9))))
        job.budget = budget
        if key is not None:
            self._learn(key, budget)
        return done

    def _learn(self, key: Any, budget: int) -> None:
        self._learned[key] = budget
        self._learned.move_to_end(key)
        if len(self._learned) > LEARNED_MAX:
            self._learned.popitem(last=False)


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

    def insert(self, key: bytes, mod: Any, owner: Hashable = None) -> None:
        """Remember ``mod`` under ``key``, evicting the least recently used beyond capacity;
        a module that can be compiled to native code starts compiling (tiered engine), for
        ``owner`` (the tenant that loaded it: compiler slots are shared fairly between
        tenants, jit/slots.py).  An evicted module's compile stops (a tenant loading ever
        new modules keeps at most ``capacity`` compiles going, not one per module); a
        context still using it compiles it again at its next launch (jit.JitState)."""
        start = getattr(mod, "start_compile", None)
        if start is not None:
            start(owner=owner)
        evicted = []
        with self._lock:
            self._mods[key] = mod
            self._mods.move_to_end(key)
            while len(self._mods) > self.capacity:
                evicted.append(self._mods.popitem(last=False)[1])
        for old in evicted:
            cancel = getattr(old, "cancel_compile", None)
            if cancel is not None:
                cancel()
