"""The guest class (GPU grid): guest contexts use only the idle cycles of host contexts.

Theory of operation
-------------------
A context is a *guest* when its opener runs under ``SCHED_IDLE`` (as its priority comes from
its nice value), when its vGPU is a guest vGPU (``vdN/guest``), or when an override says so
(``/proc/gdev/guest``, ``gset_guest``); every other context is a *host*.  On each physical
GPU's compute engine:

* hosts are always served before guests (a guest waiter sorts after every host waiter, and
  a vGPU whose head is a host is served before a vGPU whose head is a guest), and a host
  arriving while a guest's kernel runs preempts it at once (``preempt.py``), whatever the
  slice setting;
* guests run in one of the paper's two modes, per GPU:

  - **periodic** (the GPU is partially idle: a host used it lately): a guest gets pieces of
    at most ``guest_piece_us`` (P) of engine time in each period of 1/``guest_freq`` (F)
    seconds, so a host drawing F frames per second finds the engine free every period;
  - **continuous** (the GPU is fully idle): guests run without pieces until a host arrives.

Every period a tick decides the mode, as the paper's null-kernel test does: the paper times a
null kernel (k) against its time on a dedicated GPU (alpha) because a driver cannot see other
users' work; the scheduler sees it exactly, so the test is "no host held, waited for or used
the engine during the period, and hosts hold at most ``guest_mem_threshold`` bytes of device
memory" (the paper's video-memory threshold, 1 MB).  Three idle periods in a row switch to
continuous; any busy period switches back to periodic at once.  Transitions are counted and
the last ones kept (``/proc/gdev/guest_mode``).  The paper's CPU threshold (30 %) is not
used: the host processes' CPU use is not the GPU's business here.

All state belongs to the trio loop.
"""

from __future__ import annotations

import collections
import os
from typing import TYPE_CHECKING, Any

import trio

from .. import defaults as D
from ..constants import GDEV_MEM_DEVICE

if TYPE_CHECKING:
    from .scheduler import Scheduler
    from .state import Entity, PRes

IDLE_TICKS = 3          # idle periods in a row before continuous mode (the paper: three)
_IDLE = getattr(os, "SCHED_IDLE", None)


def task_is_idle(pid: int) -> bool:
    """Whether process ``pid`` runs under SCHED_IDLE (False if it cannot be read)."""
    try:
        return _IDLE is not None and os.sched_getscheduler(pid) == _IDLE
    except OSError:
        return False


class GuestState:
    """One physical GPU's guest mode and what the current period used."""

    def __init__(self, now: float) -> None:
        self.mode = "periodic"
        self.period_start = now
        self.guest_used = 0.0           # guest engine time in the current period
        self.host_used = 0.0            # host engine time in the current period
        self.idle_ticks = 0
        self.transitions = 0
        self.log: collections.deque[tuple[float, str]] = collections.deque(maxlen=16)
        self.ticking = False
        self.wake: Any = None           # the pending end-of-period grant, if armed


class Guests:
    """Guest classification, gating and modes of one scheduler."""

    def __init__(self, sched: Scheduler) -> None:
        self.sched = sched
        self.freq = D.GUEST_FREQ                      # F, periods per second
        self.piece_s = D.GUEST_PIECE_US / 1e6         # P
        self.mem_threshold = D.GUEST_MEM_THRESHOLD
        self._state: dict[int, GuestState] = {}

    def is_guest(self, se: Entity) -> bool:
        """Whether ``se`` is a guest now (override, else its vGPU, else its task)."""
        if se.guest_override is not None:
            return se.guest_override
        return bool(se.vgpu is not None and se.vgpu.guest) or se.guest_task

    def state(self, pres: PRes) -> GuestState:
        """The guest state of ``pres`` (created, with its tick task, on first use)."""
        st = self._state.get(pres.index)
        if st is None:
            st = self._state[pres.index] = GuestState(trio.current_time())
        if not st.ticking and self.sched.system.nursery is not None:
            st.ticking = True
            self.sched.system.nursery.start_soon(self._tick, pres, st)
        return st

    def state_of(self, index: int) -> GuestState | None:
        """The guest state of physical GPU ``index`` if a guest ever ran there."""
        return self._state.get(index)

    def piece_left(self, pres: PRes) -> float | None:
        """Engine time a guest may still use in this period (None: no limit)."""
        st = self.state(pres)
        if st.mode == "continuous":
            return None
        return max(0.0, self.piece_s - st.guest_used)

    def may_run(self, pres: PRes) -> bool:
        """Whether a guest may take the (free) engine of ``pres`` now; if not, a grant is
        armed for the start of the next period."""
        left = self.piece_left(pres)
        if left is None or left > 0:
            return True
        st = self.state(pres)
        if st.wake is None and self.sched.system.nursery is not None:
            st.wake = object()
            self.sched.system.nursery.start_soon(self._wake, pres, st, st.wake)
        return False

    def charge(self, pres: PRes, guest: bool, busy: float) -> None:
        """Count ``busy`` seconds of engine time of a guest or a host in this period (only
        once a guest appeared on this GPU)."""
        st = self._state.get(pres.index)
        if st is None:
            return
        if guest:
            st.guest_used += busy
        else:
            st.host_used += busy

    def _period(self) -> float:
        return 1.0 / self.freq

    async def _wake(self, pres: PRes, st: GuestState, token: object) -> None:
        await trio.sleep_until(st.period_start + self._period())
        if st.wake is token:
            st.wake = None
        self.sched.kick(pres)

    async def _tick(self, pres: PRes, st: GuestState) -> None:
        """Every period: decide the mode (the null-kernel test, see the module docstring)
        and start a new period."""
        while True:
            await trio.sleep_until(st.period_start + self._period())
            now = trio.current_time()
            if not any(self.is_guest(self.sched.entity(h)) for v in pres.order
                       for h in v.vgpu.handles):
                st.ticking = False          # no guest left: stop ticking until one comes
                return
            idle = st.host_used == 0 and not self._host_present(pres)
            st.idle_ticks = st.idle_ticks + 1 if idle else 0
            mode = "continuous" if st.idle_ticks >= IDLE_TICKS else "periodic"
            if mode != st.mode:
                st.mode = mode
                st.transitions += 1
                st.log.append((now, mode))
            st.period_start, st.guest_used, st.host_used = now, 0.0, 0.0
            if pres.job is not None and pres.job_guest:     # the running guest's new piece
                left = self.piece_left(pres)
                pres.piece_end = None if left is None else now + left
                self.sched.preempter.check(pres)
            self.sched.kick(pres)

    def _host_present(self, pres: PRes) -> bool:
        """A host holds or waits for the engine, or holds device memory above threshold."""
        se = pres.job_entity
        if se is not None and not self.is_guest(se):
            return True
        for v in pres.order:
            w = v.queue.peek()
            if w is not None and not w.guest:
                return True
        held = sum(o.size for v in pres.order for h in v.vgpu.handles
                   if not self.is_guest(self.sched.entity(h))
                   for o in h.space.objects if o.kind == GDEV_MEM_DEVICE and not o.ref)
        return held > self.mem_threshold
