"""Preemption of running kernels at slice boundaries, and each launch's time limit.

Theory of operation
-------------------
Gdev decides only when a launch arrives or completes, so a kernel that runs for seconds (a
GLoop "GPU eater") holds the engine for seconds.  The emulated engine can stop any kernel
between two quanta and resume it later (``gdevd.gpu.compute``), so the scheduler can take
the engine back from a running launch, transparently to the program:

* A launch that holds the compute engine is the physical GPU's *running job*
  (:meth:`Preempter.started`); its *slice* starts when it gets the engine.  Launches of
  the same context's other streams that start meanwhile join it (``pres.jobs``: the
  engine interleaves them) within the same slice, and a preemption request stops them
  all: a context with two busy streams gets one slice, not two.
* While another context waits for the same engine, the job is asked to yield
  (``job.preempt``) once its slice expired (``slice_s``) and the policy agrees
  (``Policy.yields``: under BAND a vGPU within its share gets another slice against a
  vGPU over its share), or at once when the waiter is more urgent: a higher priority on the
  same vGPU, a host behind a guest (guest.py), or a context of the daemon itself (an
  in-daemon module, opened with the daemon's own pid) behind a tenant.  A timer task fires
  at the slice's end when the waiter arrived before it.
* The engine stops the job at its next quantum (about a millisecond) and reports it
  *suspended*; the launch releases the engine like a completed one (its busy time charged,
  the policy's hand-over applied, so BAND and Credit see every slice) and arrives again,
  queued behind the contexts its own priority does not beat.  Its results are those of an
  uninterrupted run: the launch object holds the whole grid's state.

``slice_s == 0`` is the paper's non-preemptive behaviour (for comparison); only daemon
contexts still preempt tenants then, so the in-daemon modules keep working beside a
looping kernel.  Every field belongs to the trio loop except ``job.preempt``, a flag the
engine thread reads.

The time limit of a launch (:meth:`Preempter.limit`) is the tightest of its vGPU's
``watchdog_ms`` (0: none, the default), the configuration's ``watchdog`` (None by default)
and, for tenants' contexts, the system-wide
``kernel_time_max`` (on by default, so no tenant holds an engine indefinitely even with
preemption off).  It counts the time the kernel ran, never the time it was suspended.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import trio

from .. import defaults as D

if TYPE_CHECKING:
    from ..handle import Handle
    from .scheduler import Scheduler
    from .state import Entity, PRes


def is_daemon_context(handle: Handle) -> bool:
    """Whether ``handle`` was opened by the daemon itself (an in-daemon module via kcuda)."""
    return handle.cred.pid == os.getpid()


class Preempter:
    """Slices, preemption requests and time limits of one scheduler's compute engines."""

    def __init__(self, sched: Scheduler) -> None:
        self.sched = sched
        self.slice_s = D.SLICE_US / 1e6                 # 0: non-preemptive (the paper)
        self.kernel_time_max = D.KERNEL_TIME_MAX_MS / 1e3  # 0: no system-wide limit

    def limit(self, handle: Handle) -> float | None:
        """Seconds ``handle``'s next launch may run (None: no limit)."""
        limits = [handle.vgpu.watchdog_ms / 1e3] if handle.vgpu.watchdog_ms else []
        if handle.system.config.watchdog is not None:     # the daemon's --watchdog, for all
            limits.append(handle.system.config.watchdog)
        if self.kernel_time_max and not is_daemon_context(handle):
            limits.append(self.kernel_time_max)
        return min(limits) if limits else None

    def started(self, pres: PRes, se: Entity, job: Any, daemon: bool) -> None:
        """``se``'s launch ``job`` got the engine of ``pres``: its slice starts now, or it
        joins the slice of ``se``'s launches already running (another stream's)."""
        if pres.jobs and pres.job_entity is se:
            pres.jobs.append(job)
            job.preempt = pres.job.preempt          # a yielding context yields whole
            return
        pres.jobs = [job]
        pres.job, pres.job_entity, pres.job_daemon = job, se, daemon
        pres.slice_start = trio.current_time()
        pres.job_guest = self.sched.guests.is_guest(se)
        piece = self.sched.guests.piece_left(pres) if pres.job_guest else None
        pres.piece_end = None if piece is None else pres.slice_start + piece
        self.check(pres)

    def stopped(self, pres: PRes, job: Any) -> None:
        """``job`` left the engine (done, failed or suspended)."""
        if job in pres.jobs:
            pres.jobs.remove(job)
        if pres.job is job:
            if pres.jobs:                   # another stream's launch carries the slice on
                pres.job = pres.jobs[0]
                self.check(pres)
            else:
                pres.job = pres.job_entity = None

    @staticmethod
    def yielding(pres: PRes) -> bool:
        """Whether the running launches of ``pres`` were asked to yield the engine."""
        return pres.job is not None and pres.job.preempt

    def check(self, pres: PRes) -> None:
        """Ask the running job of ``pres`` to yield if a waiter is due the engine now; if
        one will be at the end of the slice, arm the timer.  Called on every arrival."""
        job = pres.job
        if job is None or job.preempt:
            return
        now = trio.current_time()
        if pres.piece_end is not None:                  # a guest's piece (periodic mode)
            if now >= pres.piece_end:
                self._request(pres, job)
                return
            self._arm(pres, job, pres.piece_end)
        waiter = self._most_urgent(pres)
        if waiter is None:
            return
        if self._urgent(pres, *waiter, now):
            self._request(pres, job)
            return
        if self.slice_s <= 0 or (waiter[3] and not pres.job_guest):
            return                                      # a guest never preempts a host
        due = pres.slice_start + self.slice_s
        if now < due:
            self._arm(pres, job, due)
        elif self._rival(pres, now):
            self._request(pres, job)
        else:                       # nobody the slice may go to: another slice
            pres.slice_start = now
            self._arm(pres, job, now + self.slice_s)

    def _rival(self, pres: PRes, now: float) -> bool:
        """Whether an expired slice goes to a waiter: of the same vGPU with at least the
        running launch's priority (a less urgent one waits: no priority inversion), or of
        another vGPU when the policy says so (``Policy.yields``)."""
        se = pres.job_entity
        if pres.current is None or se is None:
            return True
        mine = se.prio.effective(now)
        for v in pres.order:
            w = v.queue.peek()
            if w is None or (w.guest and not pres.job_guest):
                continue
            if v is pres.current:
                if w.prio >= mine:
                    return True
            elif self.sched.policy.yields(self.sched, pres.current, v, now):
                return True
        return False

    def _arm(self, pres: PRes, job: Any, due: float) -> None:
        """Run :meth:`check` again at ``due``, unless a timer of ``job`` fires before."""
        if pres.timer is job and pres.timer_due <= due:
            return
        if self.sched.system.nursery is not None:
            pres.timer, pres.timer_due = job, due
            self.sched.system.nursery.start_soon(self._expire, pres, job, due)

    def _request(self, pres: PRes, job: Any) -> None:
        for j in pres.jobs or [job]:
            j.preempt = True
        se = pres.job_entity
        if se is not None:
            se.usage.preemptions += 1
            self.sched.vres(se.vgpu, "compute").usage.preemptions += 1

    async def _expire(self, pres: PRes, job: Any, due: float) -> None:
        await trio.sleep_until(due)
        if pres.timer is job and pres.timer_due == due:
            pres.timer = None           # (a later timer of the same job stays armed)
        if pres.job is job:
            self.check(pres)

    def _most_urgent(self, pres: PRes) -> tuple[Any, int, bool, bool] | None:
        """(vres, priority, daemon, guest) of the most urgent waiter of ``pres``, or None."""
        best = None
        for v in pres.order:
            w = v.queue.peek()
            if w is None:
                continue
            daemon = w.entity.daemon
            key = (daemon, not w.guest, v is pres.current, w.prio)
            if best is None or key > best[0]:
                best = (key, v, w.prio, daemon, w.guest)
        return None if best is None else best[1:]

    def _urgent(self, pres: PRes, vres: Any, prio: int, daemon: bool, guest: bool,
                now: float) -> bool:
        """Whether a waiter (of ``vres``, ``prio``) may take the engine before the slice
        ends: a daemon context behind a tenant's kernel, a host behind a guest's, or
        (preemption on) a context more urgent than the running one on the same vGPU."""
        if daemon and not pres.job_daemon:
            return True
        if pres.job_guest and not guest:
            return True
        if guest and not pres.job_guest:
            return False
        if self.slice_s <= 0 or vres is not pres.current or pres.job_entity is None:
            return False
        return prio > pres.job_entity.prio.effective(now)
