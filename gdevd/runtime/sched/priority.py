"""Gdev priorities (0-40) taken from the calling task, and their per-context override.

Direction: **higher is more urgent**, everywhere (``/proc/gdev/contexts``,
``/proc/gdev/priority``, the ``SET_PRIORITY`` ioctl, ``cuCtxSetPriority``).  This fixes
the original's quirk, whose wait queues put numerically larger kernel ``static_prio`` first,
i.e. the *nicer* task first.

Mapping from the opening process (read with ``getpriority(2)`` and ``sched_getscheduler(2)``,
two system calls, refreshed at most every :data:`REFRESH_S` so a ``renice`` takes effect):

=====================================  ===========================
task                                   Gdev priority
=====================================  ===========================
SCHED_FIFO / SCHED_RR (any rt_prio)    40 (:data:`PRIO_MAX`)
SCHED_OTHER/BATCH, nice n (-20..19)    ``min(39, 20 - n)``: nice 0 is 20
                                       (:data:`PRIO_DEFAULT`), nice 19 is 1
SCHED_IDLE                             0 (:data:`PRIO_MIN`)
=====================================  ===========================

So a real-time task always outranks every time-sharing task, as in Linux, and the range is
Gdev's ``GDEV_PRIO_MIN..MAX``.  An override (ioctl, CUDA layer or ``/proc``) replaces the
derived value until it is cleared.  Only root may set an override above the task's own
priority (like lowering a nice value needs ``CAP_SYS_NICE``).
"""

from __future__ import annotations

import errno
import os

from ...errors import GdevError
from ..defaults import PRIO_DEFAULT, PRIO_MAX, PRIO_MIN  # noqa: F401 - re-exported

REFRESH_S = 0.05          # a renice is seen within 50 ms (two syscalls per refresh)

_RT_POLICIES = {getattr(os, n) for n in ("SCHED_FIFO", "SCHED_RR") if hasattr(os, n)}
_IDLE = getattr(os, "SCHED_IDLE", None)


def check_priority(value: object) -> int:
    """``value`` if it is an int in [PRIO_MIN, PRIO_MAX]; else ``GdevError(EINVAL)``."""
    if isinstance(value, bool) or not isinstance(value, int) or \
            not PRIO_MIN <= value <= PRIO_MAX:
        raise GdevError(errno.EINVAL, f"priority must be an integer in "
                                      f"[{PRIO_MIN}, {PRIO_MAX}]: {value!r}")
    return value


def from_nice(nice: int) -> int:
    """The Gdev priority of a time-sharing task with nice value ``nice``."""
    return max(PRIO_MIN + 1, min(PRIO_MAX - 1, PRIO_DEFAULT - nice))


def task_priority(pid: int) -> int | None:
    """The Gdev priority of process ``pid`` now, or None if it cannot be read (gone)."""
    try:
        policy = os.sched_getscheduler(pid)
        if policy in _RT_POLICIES:
            return PRIO_MAX
        if policy == _IDLE:
            return PRIO_MIN
        return from_nice(os.getpriority(os.PRIO_PROCESS, pid))
    except OSError:
        return None


class TaskPriority:
    """A context's priority: the opener's, refreshed lazily, unless overridden."""

    __slots__ = ("pid", "override", "_task", "_read_at")

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.override: int | None = None
        self._task = PRIO_DEFAULT
        self._read_at = float("-inf")

    def task(self, now: float) -> int:
        """The opener's priority, re-read if older than REFRESH_S (``now``: monotonic s)."""
        if now - self._read_at >= REFRESH_S or now < self._read_at:
            self._read_at = now
            prio = task_priority(self.pid)
            if prio is not None:
                self._task = prio
        return self._task

    def effective(self, now: float) -> int:
        """The priority the scheduler uses: the override if set, else the task's."""
        return self.override if self.override is not None else self.task(now)

    def set_override(self, value: int | None, *, privileged: bool, now: float) -> int:
        """Set (or clear, with None) the override; return the effective priority.

        EINVAL for a value outside 0..40; EPERM when an unprivileged caller asks for more
        than its task's own priority.
        """
        if value is not None:
            check_priority(value)
            if not privileged and value > self.task(now):
                raise GdevError(errno.EPERM, f"priority {value} exceeds the task's "
                                             f"{self.task(now)}; only root may raise it")
        self.override = value
        return self.effective(now)
