"""Gdev verbs for priorities and the guest class (not in the original Gdev).

``gset_priority(h, prio)`` overrides the context's priority (0-40, higher is more urgent;
None clears the override so the opener's nice/RT priority applies again) and returns the
effective priority; ``gget_priority(h)`` returns it.  Only a context opened by root may
raise its priority above its task's own (EPERM otherwise), as only root may lower a nice
value.  ``gset_guest(h, flag)`` makes a context a guest or a host (guest.py);
``gget_guest(h)`` tells which it is.
"""

from __future__ import annotations

import errno

import trio

from ...errors import GdevError
from ..handle import Handle, check_handle


async def gset_priority(handle: Handle, prio: int | None) -> int:
    """Override (or with None clear) the priority of ``handle``; the effective priority.

    Errors: EBADF (closed handle), EINVAL (not an integer in 0..40), EPERM (raising above
    the task's priority without root).
    """
    await trio.lowlevel.checkpoint()
    check_handle(handle)
    se = handle.system.scheduler.entity(handle)
    return int(se.prio.set_override(prio, privileged=handle.cred.uid == 0,
                                    now=trio.current_time()))


async def gget_priority(handle: Handle) -> int:
    """The priority the scheduler uses for ``handle`` now (override or task's).  EBADF."""
    await trio.lowlevel.checkpoint()
    check_handle(handle)
    return int(handle.system.scheduler.entity(handle).prio.effective(trio.current_time()))


async def gset_guest(handle: Handle, guest: bool | None) -> bool:
    """Make ``handle`` a guest (True: it runs only in the hosts' idle cycles), a host
    (False), or (None) what its opener's scheduling policy and its vGPU say; returns
    whether it is a guest now.  Any context may demote itself to a guest; only a context
    opened by root may make itself a host against its task or vGPU (EPERM otherwise).
    Errors: EBADF, EINVAL (not a bool or None), EPERM.
    """
    await trio.lowlevel.checkpoint()
    check_handle(handle)
    if guest is not None and not isinstance(guest, bool):
        raise GdevError(errno.EINVAL, f"guest must be True, False or None: {guest!r}")
    sched = handle.system.scheduler
    se = sched.entity(handle)
    if guest is False and handle.cred.uid != 0:
        saved, se.guest_override = se.guest_override, None
        if sched.guests.is_guest(se):
            se.guest_override = saved
            raise GdevError(errno.EPERM, "only root may make a guest context a host")
    se.guest_override = guest
    return bool(sched.guests.is_guest(se))


async def gget_guest(handle: Handle) -> bool:
    """Whether ``handle`` is a guest now (its override, else its opener and vGPU).  EBADF."""
    await trio.lowlevel.checkpoint()
    check_handle(handle)
    sched = handle.system.scheduler
    return bool(sched.guests.is_guest(sched.entity(handle)))
