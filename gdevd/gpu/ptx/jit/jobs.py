"""The compiler processes of one build: at most one per core, niced, and tied to our life.

A compile must not outlive the process that asked for it: a daemon killed (even by
SIGKILL) in the middle of a cold compile would otherwise leave its ``cc`` drivers and
their ``cc1``/``as`` children running for minutes on a machine whose cores it no longer
uses.  ``PR_SET_PDEATHSIG`` on the driver is not enough (the driver dies, ``cc1`` is its
child and carries on), and a ``preexec_fn`` is unsafe in a threaded process.  So every job
of a build runs in one process group led by a *guard*: a tiny ``sh`` whose stdin is the
read end of a pipe whose only write end (close-on-exec) is held by this process.  When
this process ends, however it ends, the kernel closes the write end, the guard's ``read``
returns at end of file, and the guard kills its whole group (``kill -KILL 0``): drivers,
compilers, assemblers and itself.  Closing :class:`Jobs` does the same deliberately, so a
failed or cancelled build leaves nothing behind either.

All builds of a process share one compiler process per core (:data:`_slots`), plus one
slot for a kernel a launch waits for (:data:`_urgent`), so that it need not wait for the
longest compiles to end.  Both are granted fairly between the builds' owners (tenants):
``slots.py``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path

from .slots import FairSlots

# The guard: wait for end of file on stdin (our death or close), then kill the group.
GUARD = "read _ ; kill -KILL 0"
# Compiler processes of this process, all builds together: one per core.  Many modules
# loaded at once then finish one after another instead of all late, and a burst of loads
# does not start dozens of compilers.
_slots = FairSlots(os.cpu_count() or 1)
# One more, for a kernel a launch waits for while every core compiles (Jobs.start urgent).
_urgent = FairSlots(1)


@dataclass
class _Job:
    proc: subprocess.Popen
    err: Path                                   # its messages
    slot: FairSlots                             # released (for its build's owner) when it ends
    done: Callable[[int, str], None] | None     # told its exit status and messages


class Cancelled(Exception):
    """The build was cancelled (:meth:`Jobs.cancel`) before it finished."""


class Jobs:
    """Compiler processes, at most ``limit`` at a time, in one process group that dies with
    this process (see the module docstring), their messages in files under ``tmp`` (a pipe
    nobody reads could stall a chatty compiler).  The first failure raises RuntimeError
    with the compiler's message; :meth:`cancel` (from any thread) kills every job and makes
    the waiting thread raise :class:`Cancelled` (as does setting the ``cancelled`` event
given); leaving the ``with`` block kills whatever
    still runs, grandchildren included."""

    def __init__(self, tmp: Path, cancelled: threading.Event | None = None,
                 limit: int | None = None, owner: Hashable = None) -> None:
        self.tmp, self.limit = tmp, limit or os.cpu_count() or 1
        self.owner = owner      # whom the slots are granted to (slots.py)
        self.running: list[_Job] = []
        self.started = 0
        self.cancelled = cancelled or threading.Event()
        self._guard: subprocess.Popen | None = None
        self._lifeline = -1
        # the guard's pid names our group only until it is reaped: no kill after that
        self._lock = threading.Lock()
        self._closed = False

    def __enter__(self) -> Jobs:
        read, self._lifeline = os.pipe()     # both close-on-exec: no other child holds them
        try:
            self._guard = subprocess.Popen([shutil.which("sh") or "/bin/sh", "-c", GUARD],
                                           stdin=read, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL, process_group=0)
        except BaseException:
            os.close(self._lifeline)
            raise
        finally:
            os.close(read)
        return self

    def __exit__(self, *exc) -> None:
        with self._lock:
            self._kill_group()
            self._closed = True
        os.close(self._lifeline)
        assert self._guard is not None
        self._guard.wait()
        for job in self.running:
            job.proc.wait()
            job.slot.release(self.owner)
        self.running.clear()

    def _kill_group(self) -> None:
        assert self._guard is not None
        try:
            os.killpg(self._guard.pid, signal.SIGKILL)
        except ProcessLookupError:      # the group is gone already
            pass

    def cancel(self) -> None:
        """Kill every job now; the thread in :meth:`start` or :meth:`wait` raises
        :class:`Cancelled` (so does any later call)."""
        self.cancelled.set()
        with self._lock:
            if self._guard is not None and not self._closed:
                self._kill_group()

    def start(self, cmd: list[str], done: Callable[[int, str], None] | None = None,
              urgent: bool = False, interrupt: Callable[[], bool] | None = None) -> bool:
        """Run ``cmd`` (a compiler command line) once fewer than ``limit`` jobs of this
        build, and fewer than one per core of all builds, run; an ``urgent`` job may take
        the one extra slot instead.  Returns False, starting nothing, if ``interrupt``
        returns true while it waits for a slot; ``done(status, messages)`` is called when
        the job ends."""
        slot = self._slot(urgent, interrupt)
        if slot is None:
            return False
        if self.cancelled.is_set():
            slot.release(self.owner)
            raise Cancelled("compile cancelled")
        assert self._guard is not None, "Jobs used outside its with block"
        self.started += 1
        err = self.tmp / f"cc-{self.started}.err"
        try:
            with open(err, "wb") as f:
                # the compiler's own temporary files in the build's directory: a job
                # killed mid-compile (cancel, our death) leaves none in the system's
                proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=f,
                                        process_group=self._guard.pid,
                                        env={**os.environ, "TMPDIR": str(self.tmp)})
        except BaseException:
            slot.release(self.owner)
            raise
        self.running.append(_Job(proc, err, slot, done))
        return True

    def _slot(self, urgent: bool, interrupt: Callable[[], bool] | None) -> FairSlots | None:
        """A compiler slot, acquired for this build's owner (reaping finished jobs
        meanwhile); None if ``interrupt`` turned true first."""
        ticket = object()           # this wait, in the slots' queues
        try:
            while True:
                self._check_cancelled()
                if urgent and _urgent.try_acquire(self.owner, ticket):
                    return _urgent
                if len(self.running) >= self.limit:
                    _slots.leave(ticket)    # (at its own limit: not in line for a slot)
                elif _slots.try_acquire(self.owner, ticket):
                    return _slots
                time.sleep(0.005)
                if interrupt is not None and interrupt():
                    return None
                if self.running:
                    self._reap(block=False)
        finally:
            _urgent.leave(ticket)
            _slots.leave(ticket)

    def wait(self) -> None:
        """Return once every job has finished (RuntimeError if one failed)."""
        while self.running:
            self._reap()
        self._check_cancelled()

    def _check_cancelled(self) -> None:
        if self.cancelled.is_set():
            raise Cancelled("compile cancelled")

    def _reap(self, block: bool = True) -> None:
        """Collect finished jobs (waiting for one unless ``block`` is false)."""
        while True:
            done = [job for job in self.running if job.proc.poll() is not None]
            if done or not block:
                break
            if self.cancelled.is_set():
                self.cancel()
                raise Cancelled("compile cancelled")
            time.sleep(0.005)
        for job in done:
            self.running.remove(job)
            job.slot.release(self.owner)
            self._check_cancelled()
            status = job.proc.returncode
            message = job.err.read_text(errors="replace")[-2000:] if status else ""
            if job.done is not None:
                job.done(status, message)
            elif status:
                raise RuntimeError(f"cc failed: {message}")
