"""The API-driven scheduler: ``system.scheduler``, invoked around every launch and engine copy.

Theory of operation
-------------------
Gdev schedules at two levels (paper section 5; docs/scheduling.md).  A launch or a copy
first *arrives* (:meth:`Scheduler.begin`): if its resource (the compute engine, or the copy
engines under MRQ) is free, the context takes it at once; otherwise it joins its vGPU's wait
queue, in priority order, and sleeps on a ``trio.Event``.  The resource is held by one
context of one vGPU at a time; that context may have several operations in flight
(:data:`~gdevd.runtime.defaults.INSTANCES_MAX`) and its busy time is the makespan from the
first to the last.  When the last completes (:meth:`Scheduler.end`, run from the engine's
completion "interrupt" on the trio loop), the vGPU is charged (credit, utilisation window,
counters), the policy may demote it, and the resource is handed over directly to the head of
the first vGPU in the policy's order that has waiters: ``granted`` is set before the event,
so there is no thundering herd and no retry loop.  BAND may instead hold the resource free
for ``band_wait`` (time buffering) so a vGPU with short bursts can re-arrive first.

Credit is replenished lazily: every read first adds ``period * share / 100`` for each whole
period elapsed (Gdev's replenish thread, without a thread).  Shares, periods, the policy,
the queueing mode and the tunables are read live, so ``/proc`` writes take effect at the
next decision.  All state belongs to the trio loop; the only awaits are the arrival delay
and the wait for a grant (docs/concurrency.md).
"""

from __future__ import annotations

import collections
import errno
import weakref
from typing import TYPE_CHECKING, Any

import trio

from ...errors import GdevError
from .. import defaults as D
from .guest import Guests, task_is_idle
from .policies import POLICIES, Policy
from .preempt import Preempter, is_daemon_context
from .state import COMPUTE, MEMORY, Entity, PRes, VRes, Waiter

if TYPE_CHECKING:
    from ..handle import Handle
    from ..system import GdevSystem

QUEUEING = ("mrq", "sdq")


class Scheduler:
    """Gdev's scheduler for one system; install as ``system.scheduler``."""

    def __init__(self, system: GdevSystem, policy: str = D.SCHED_POLICY,
                 queueing: str = D.SCHED_QUEUEING) -> None:
        self.system = system
        self.policy: Policy = POLICIES[policy]()
        self.queueing = queueing
        self.preempter = Preempter(self)
        self.guests = Guests(self)
        self.band_wait = D.BAND_WAIT_US / 1e6
        self.window = D.UTIL_WINDOW_US / 1e6
        self.instances_max = D.INSTANCES_MAX
        self.grants: collections.deque[tuple[float, int, str]] = collections.deque(maxlen=4096)
        # Busy intervals (vGPU, resource, cid, start, end), recorded while not None
        # (benchmarks and tests set it to a list; nothing else reads it).
        self.trace: list[tuple[int, str, int, float, float]] | None = None
        self._entities: weakref.WeakKeyDictionary[Handle, Entity] = \
            weakref.WeakKeyDictionary()
        self._vres: dict[tuple[int, str], VRes] = {}
        self._pres: dict[tuple[int, str], PRes] = {}

    # --- records ------------------------------------------------------------------------

    def entity(self, handle: Handle) -> Entity:
        """The scheduling entity of ``handle`` (created on first use)."""
        se = self._entities.get(handle)
        if se is None:
            se = self._entities[handle] = Entity(handle.cid, handle.cred.pid, handle.vgpu,
                                                 is_daemon_context(handle))
            se.guest_task = task_is_idle(handle.cred.pid)
        return se

    def vres(self, vgpu: Any, kind: str) -> VRes:
        """The record of ``vgpu``'s ``kind`` resource ("compute" or "memory")."""
        key = (vgpu.minor, kind)
        v = self._vres.get(key)
        if v is None:
            v = self._vres[key] = VRes(vgpu, kind, trio.current_time())
            self.pres(vgpu.phys.index, kind).order.append(v)
        return v

    def pres(self, index: int, kind: str) -> PRes:
        """The record of physical GPU ``index``'s ``kind`` resource."""
        p = self._pres.get((index, kind))
        if p is None:
            p = self._pres[(index, kind)] = PRes(index, kind)
        return p

    def _resource(self, handle: Handle, kind: str) -> tuple[VRes, PRes]:
        rk = COMPUTE if self.queueing == "sdq" else kind
        return self.vres(handle.vgpu, rk), self.pres(handle.phys.index, rk)

    # --- the seam (system.scheduler) -------------------------------------------------------

    async def compute_begin(self, handle: Handle) -> None:
        """Wait for the compute engine, in priority order (before a launch)."""
        await self.begin(handle, COMPUTE)

    def compute_started(self, handle: Handle, job: Any) -> None:
        """``handle``'s launch ``job`` (granted by :meth:`compute_begin`) goes to the engine:
        it may be preempted from now on (preempt.py)."""
        if self.policy.exclusive:
            se = self.entity(handle)
            self.preempter.started(self._resource(handle, COMPUTE)[1], se, job, se.daemon)

    def compute_end(self, handle: Handle, job: Any = None, suspended: bool = False) -> None:
        """A launch of ``handle`` completed, or (``suspended``) yielded the engine and will
        arrive again: its slice is charged, but it is not counted as a launch."""
        if job is not None:
            self.preempter.stopped(self._resource(handle, COMPUTE)[1], job)
        self.end(handle, COMPUTE, count=not suspended)

    async def memory_begin(self, handle: Handle) -> None:
        """Wait for the copy engines (MRQ) or the device (SDQ) before an engine copy."""
        await self.begin(handle, MEMORY)

    def memory_end(self, handle: Handle) -> None:
        """An engine copy of ``handle`` completed."""
        self.end(handle, MEMORY)

    # --- arrival --------------------------------------------------------------------------

    async def begin(self, handle: Handle, kind: str) -> None:
        """Arrive for ``kind``; return once ``handle`` holds the resource.

        Cancellation-safe: a cancelled waiter leaves the queue (or releases a grant that
        raced with the cancellation).  ECANCELED if the context closed while it waited.
        """
        se = self.entity(handle)
        vres, pres = self._resource(handle, kind)
        now = t0 = trio.current_time()
        guest = pres.kind == COMPUTE and self.guests.is_guest(se)
        if not self.policy.exclusive:
            self._grant(None, vres, se, kind, now)
            return
        self.replenish(vres, now)
        if vres.current is se and se.instances[vres.kind] < self.instances_max and \
                not self.preempter.yielding(pres):     # (a yielding context queues)
            self._grant(pres, vres, se, kind, now)
            return
        if pres.current is None:
            delay = self.policy.arrival_delay(self, vres, now)
            if delay > 0:
                await trio.sleep(delay)
                now = trio.current_time()
                if not self.policy.exclusive:               # switched to NULL meanwhile
                    self._grant(None, vres, se, kind, now)
                    return
            elif not len(vres.queue) and (not guest or self.guests.may_run(pres)):
                pres.buffering = None
                self._grant(pres, vres, se, kind, now)      # uncontended: no queue at all
                return
        w = vres.queue.push(se, kind, se.prio.effective(now), now, guest)
        if pres.current is None:
            pres.buffering = None  # an arrival ends any time buffering
            self._grant_head(pres, vres, now)
        else:
            self.preempter.check(pres)     # the running launch may have to yield
        if not w.granted:
            await self._wait(w, handle, vres, kind)
        waited = trio.current_time() - t0
        se.usage.wait_s += waited
        vres.usage.wait_s += waited
        if handle.closed:
            self.end(handle, kind)
            raise GdevError(errno.ECANCELED, "context closed while waiting for the GPU")

    async def _wait(self, w: Waiter, handle: Handle, vres: VRes, kind: str) -> None:
        try:
            await w.event.wait()
        except BaseException:
            if w.granted:
                self.end(handle, kind)
            else:
                vres.queue.remove(w)
            raise
        w.entity.usage.dispatches += 1

    def _grant_head(self, pres: PRes, vres: VRes, now: float) -> None:
        head = vres.queue.peek()
        if head is not None and head.guest and not self.guests.may_run(pres):
            return      # a guest out of its piece: granted at the next period (guest.py)
        w = vres.queue.pop()
        if w is not None:
            self._grant_group(pres, vres, w, now)

    def _grant_group(self, pres: PRes | None, vres: VRes, w: Waiter, now: float) -> None:
        """Grant lead ``w`` and its companions (the context's other streams: they run beside
        it within one makespan, charged once), up to ``instances_max`` in flight; the rest
        queue again behind the contexts of equal priority."""
        group, w.companions = [w, *w.companions], []
        for i, x in enumerate(group):
            if pres is not None and i and x.entity.instances[vres.kind] >= self.instances_max:
                vres.queue.requeue(group[i:])
                return
            x.lead = None
            self._grant(pres, vres, x.entity, x.kind, now)
            x.granted = True
            x.event.set()

    def _grant(self, pres: PRes | None, vres: VRes, se: Entity, kind: str, now: float) -> None:
        rk = vres.kind
        if se.instances[rk] == 0:
            se.first_tick[rk] = now
        se.instances[rk] += 1
        se.held[kind].append(vres)
        if pres is not None:
            vres.current, pres.current = se, vres
        self.grants.append((now, se.cid, kind))

    # --- completion -----------------------------------------------------------------------

    def end(self, handle: Handle, kind: str, count: bool = True) -> None:
        """An operation of ``kind`` that ``begin`` granted has completed (on the trio loop);
        ``count`` False for a slice of a launch that goes on later."""
        se = self._entities.get(handle)
        if se is None or not se.held[kind]:
            return
        vres = se.held[kind].pop()
        now = trio.current_time()
        if count:
            self._count(se, vres, kind)
        rk = vres.kind
        se.instances[rk] -= 1
        if se.instances[rk] > 0:
            return
        self._charge(se, vres, se.first_tick[rk], now)
        if vres.current is se:
            vres.current = None
            self._release(self.pres(vres.vgpu.phys.index, rk), vres, now)

    def _charge(self, se: Entity, vres: VRes, start: float, now: float) -> None:
        """Charge the busy interval ``[start, now]`` to ``se`` and ``vres``."""
        busy = now - start
        se.usage.charge(vres.kind, busy)
        vres.usage.charge(vres.kind, busy)
        self.replenish(vres, now)
        vres.credit -= busy
        vres.window.add(start, now)
        if vres.kind == COMPUTE:
            self.guests.charge(self.pres(vres.vgpu.phys.index, COMPUTE),
                               self.guests.is_guest(se), busy)
        if self.trace is not None:
            self.trace.append((vres.vgpu.minor, vres.kind, se.cid, start, now))
        vres.last_active = now

    # --- direct copies (docs/scheduling.md, "Direct copies") ------------------------------

    async def direct_begin(self, handle: Handle) -> float:
        """Before a direct copy of ``handle`` (done on the trio loop, no engine); returns
        its start time for :meth:`direct_end`.

        A direct copy never queues for (or holds) the memory resource: the caller has pinned
        its pages, and a pinned waiter could stall a swap-in (gdevd/runtime/mm/residency.py).
        Instead, when the policy gates it (:meth:`Policy.gates_direct`: for BAND, a vGPU
        over its share while another vGPU is active) it is time-buffered: it sleeps
        ``band_wait`` first, as an over-share arrival does.  Otherwise no checkpoint.
        """
        vres = self._resource(handle, MEMORY)[0]
        now = trio.current_time()
        if self.policy.exclusive and self.policy.gates_direct(self, vres, now):
            self.entity(handle).usage.wait_s += self.band_wait
            vres.usage.wait_s += self.band_wait
            await trio.sleep(self.band_wait)
            now = trio.current_time()
        return now

    def direct_end(self, handle: Handle, started: float) -> None:
        """A direct copy begun at ``started`` (:meth:`direct_begin`) is done: charge its time
        to the context's and the vGPU's copy time, credit and utilisation."""
        se = self.entity(handle)
        vres = self._resource(handle, MEMORY)[0]
        self._count(se, vres, MEMORY)
        if vres.current is None:
            self._charge(se, vres, started, trio.current_time())
        else:   # inside the makespan of the vGPU's own engine copy: no second interval
            busy = trio.current_time() - started
            se.usage.charge(vres.kind, busy)
            vres.usage.charge(vres.kind, busy)
            vres.credit -= busy

    def timed_out(self, handle: Handle) -> None:
        """Count a launch of ``handle`` killed by its time limit (ETIME)."""
        self.entity(handle).usage.timeouts += 1
        self.vres(handle.vgpu, COMPUTE).usage.timeouts += 1

    def copied(self, handle: Handle, nbytes: int) -> None:
        """Account ``nbytes`` copied by ``handle`` on any path (direct copies included)."""
        self.entity(handle).usage.bytes_copied += nbytes
        self.vres(handle.vgpu, MEMORY).usage.bytes_copied += nbytes

    @staticmethod
    def _count(se: Entity, vres: VRes, kind: str) -> None:
        for u in (se.usage, vres.usage):
            if kind == COMPUTE:
                u.launches += 1
            else:
                u.copies += 1

    def _release(self, pres: PRes, vres: VRes, now: float) -> None:
        if pres.current is vres:
            pres.current = None
        self.policy.on_complete(self, pres, vres, now)
        nxt = pres.first_waiting()
        if nxt is None:
            return
        delay = self.policy.handoff_delay(self, pres, vres, nxt, now)
        if delay <= 0 or self.system.nursery is None:
            self._grant_head(pres, nxt, now)
            return
        token = pres.buffering = object()
        self.system.nursery.start_soon(self._buffered_handoff, pres, token, delay)

    def kick(self, pres: PRes) -> None:
        """Hand a free ``pres`` to its first waiter (a guest's new period began)."""
        if pres.current is None and pres.buffering is None:
            nxt = pres.first_waiting()
            if nxt is not None:
                self._grant_head(pres, nxt, trio.current_time())

    async def _buffered_handoff(self, pres: PRes, token: object, delay: float) -> None:
        await trio.sleep(delay)
        if pres.buffering is not token:
            return  # someone arrived and took the resource meanwhile
        pres.buffering = None
        if pres.current is None:
            nxt = pres.first_waiting()
            if nxt is not None:
                self._grant_head(pres, nxt, trio.current_time())

    # --- measurements and knobs -------------------------------------------------------------

    def replenish(self, vres: VRes, now: float) -> None:
        """Add the credit of every whole period elapsed (BAND and Credit only)."""
        period = vres.period
        n = int((now - vres.replenished) / period)
        if n <= 0:
            return
        vres.replenished += n * period
        if not self.policy.replenishes:
            return
        for _ in range(min(n, 1000)):
            vres.credit += period * vres.share / 100
            if vres.credit > period:
                vres.credit = 0.0       # Gdev: hoarded credit is lost
            elif vres.credit < -period:
                # Gdev forgives such a debt (resets it to 0); it is kept at one period here,
                # or a small share whose slices overrun (the engine stops a kernel only at a
                # quantum, later on a loaded host) would run free after every overrun
                vres.credit = -period

    def utilisation(self, vres: VRes, now: float | None = None) -> float:
        """Measured utilisation of ``vres`` over the window, percent (0-100)."""
        return vres.utilisation(trio.current_time() if now is None else now, self.window)

    @staticmethod
    def active(vres: VRes, now: float) -> bool:
        """Whether ``vres`` waits for, holds, or used its resource within its last period."""
        return bool(len(vres.queue)) or vres.current is not None or \
            now - vres.last_active < vres.period

    def alone(self, vres: VRes, now: float) -> bool:
        """Whether no other vGPU of the same GPU is :meth:`active`."""
        pres = self.pres(vres.vgpu.phys.index, vres.kind)
        return not any(o is not vres and self.active(o, now) for o in pres.order)

    def effective_share(self, vres: VRes, now: float) -> float:
        """``vres``'s share among the active vGPUs, percent: the shares of idle vGPUs are
        handed to the active ones in proportion to their own (work conservation)."""
        pres = self.pres(vres.vgpu.phys.index, vres.kind)
        total = sum(o.share for o in pres.order if o is vres or self.active(o, now))
        return 100.0 * vres.share / total if total else 100.0

    def set_policy(self, name: str) -> None:
        """Switch the vGPU policy (``band``, ``credit``, ``fifo``, ``null``); EINVAL if unknown.

        Switching to NULL grants every queued context at once (nothing would wake them).
        """
        if name not in POLICIES:
            raise GdevError(errno.EINVAL, f"unknown scheduler {name!r}; one of "
                                          f"{', '.join(POLICIES)}")
        self.policy = POLICIES[name]()
        if not self.policy.exclusive:
            now = trio.current_time()
            for v in self._vres.values():
                while (w := v.queue.pop()) is not None:
                    self._grant_group(None, v, w, now)

    def set_queueing(self, mode: str) -> None:
        """Switch between MRQ (separate compute and copy queues) and SDQ (one queue)."""
        if mode not in QUEUEING:
            raise GdevError(errno.EINVAL, f"queueing must be mrq or sdq: {mode!r}")
        self.queueing = mode

    def entities(self) -> list[tuple[Handle, Entity]]:
        """Every open context with its entity (created if it never ran), by context id."""
        return [(h, self.entity(h)) for _, h in sorted(self.system.handles.items())]
