"""Gdev priorities from the task (nice, real-time) and the per-context override."""

from __future__ import annotations

import errno
import os
import subprocess
import sys

import pytest

from gdevd.errors import GdevError
from gdevd.runtime.sched import PRIO_DEFAULT, PRIO_MAX, check_priority, task_priority
from gdevd.runtime.sched.priority import REFRESH_S, TaskPriority, from_nice


def test_nice_maps_to_gdev_priorities_higher_is_more_urgent() -> None:
    assert from_nice(0) == PRIO_DEFAULT == 20
    assert from_nice(19) == 1 and from_nice(-19) == 39 and from_nice(-20) == 39
    assert all(from_nice(n) > from_nice(n + 1) for n in range(-19, 19))


def test_the_callers_priority_follows_its_nice_value() -> None:
    assert task_priority(os.getpid()) == from_nice(os.getpriority(os.PRIO_PROCESS, 0))


def test_a_renice_takes_effect_after_the_refresh_interval() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        prio = TaskPriority(child.pid)
        before = prio.effective(0.0)
        os.setpriority(os.PRIO_PROCESS, child.pid, 15)      # raising nice needs no privilege
        assert prio.effective(REFRESH_S / 2) == before      # cached
        assert prio.effective(REFRESH_S) == from_nice(15) == 5
    finally:
        child.kill()
        child.wait()
    assert task_priority(child.pid) is None                 # gone: unknown
    assert prio.effective(10.0) == 5                        # keeps the last value


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to select SCHED_FIFO")
def test_a_real_time_task_gets_the_top_priority() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        os.sched_setscheduler(child.pid, os.SCHED_FIFO, os.sched_param(1))
        assert task_priority(child.pid) == PRIO_MAX
    finally:
        child.kill()
        child.wait()


def test_overrides_are_checked_and_unprivileged_callers_cannot_raise() -> None:
    prio = TaskPriority(os.getpid())
    mine = prio.task(0.0)
    with pytest.raises(GdevError) as info:
        prio.set_override(mine + 1, privileged=False, now=0.0)
    assert info.value.errno == errno.EPERM and prio.override is None
    assert prio.set_override(mine - 1, privileged=False, now=0.0) == mine - 1
    assert prio.set_override(40, privileged=True, now=0.0) == 40
    for bad in (-1, 41, True, 2.0, "3"):
        with pytest.raises(GdevError) as info:
            prio.set_override(bad, privileged=True, now=0.0)  # type: ignore[arg-type]
        assert info.value.errno == errno.EINVAL
        with pytest.raises(GdevError):
            check_priority(bad)
    assert prio.override == 40
    assert prio.set_override(None, privileged=False, now=0.0) == mine
