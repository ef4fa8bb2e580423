"""Gdev verbs for priorities (not in the original Gdev, which had no priority API).

``gset_priority(h, prio)`` overrides the context's priority (0-40, higher is more urgent;
None clears the override so the opener's nice/RT priority applies again) and returns the
effective priority; ``gget_priority(h)`` returns it.  Only a context opened by root may
raise its priority above its task's own (EPERM otherwise), as only root may lower a nice
value.
"""

from __future__ import annotations

import trio

from ..handle import Handle, check_handle


async def gset_priority(handle: Handle, prio: int | None) -> int:
    """Override (or with None clear) the priority of ``handle``; the effective priority.

    Errors: EBADF (closed handle), EINVAL (not an integer in 0..40), EPERM (raising above
    the task's priority without root).
    """
    await trio.lowlevel.checkpoint()
    check_handle(handle)
    se = handle.system.policy.entity(handle)
    return int(se.prio.set_override(prio, privileged=handle.cred.uid == 0,
                                    now=trio.current_time()))


async def gget_priority(handle: Handle) -> int:
    """The priority the scheduler uses for ``handle`` now (override or task's).  EBADF."""
    await trio.lowlevel.checkpoint()
    check_handle(handle)
    return int(handle.system.policy.entity(handle).prio.effective(trio.current_time()))
