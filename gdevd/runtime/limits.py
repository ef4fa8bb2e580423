"""Per-tenant limits: what one tenant may take so that the others keep working.

Each check is called where the resource is admitted and changes nothing when it refuses:

* contexts (:func:`check_gopen`): a physical GPU holds ``contexts_max`` contexts; non-root
  users share all but the last ``contexts_reserved`` of them (kept for root and the daemon's
  own modules, at most half), and one non-root user holds at most ``contexts_per_user``;
  over either, gopen fails with EBUSY;
* pinned host memory (:func:`check_pinned`): one context holds at most
  ``pinned_per_session`` bytes (its staging buffer included), ENOMEM beyond;
* queued launches (:func:`launch_slot`): a context with ``launches_queued_max`` launches
  queued or running waits, in the launch call, until one ends (a real GPU's push buffer
  blocks the same way), so the daemon's memory for queued launches is bounded and returns
  as they complete;
* shm segments: see :meth:`.shm.ShmTable.check_room` (``shm_per_user`` per non-root user).

The values live in :class:`~.config.GdevConfig`; ``/proc/gdev/limits`` shows them with the
current use (:func:`limits_text`).
"""

from __future__ import annotations

import errno
from collections import Counter
from typing import TYPE_CHECKING

from ..errors import GdevError

if TYPE_CHECKING:
    from .handle import Handle
    from .system import Credentials, GdevSystem, VirtualGpu

ROOT = 0


def reserved_contexts(system: GdevSystem) -> int:
    """Contexts per physical GPU that only root (and the daemon's modules) may take."""
    c = system.config
    return min(c.contexts_reserved, c.contexts_max // 2)


def check_gopen(system: GdevSystem, vgpu: VirtualGpu, cred: Credentials) -> None:
    """Raise EBUSY if ``cred`` may not open one more context on ``vgpu``'s physical GPU."""
    c = system.config
    mine = [h for h in system.handles.values() if h.phys is vgpu.phys]
    if len(mine) >= c.contexts_max:
        raise GdevError(errno.EBUSY, f"gpu{vgpu.phys.index} has {len(mine)} contexts already")
    if cred.uid == ROOT:
        return
    if len(mine) >= c.contexts_max - reserved_contexts(system):
        raise GdevError(errno.EBUSY, f"gpu{vgpu.phys.index}: the last "
                                     f"{reserved_contexts(system)} contexts are for root")
    own = sum(1 for h in mine if h.cred.uid == cred.uid)
    if own >= c.contexts_per_user:
        raise GdevError(errno.EBUSY, f"uid {cred.uid} holds {own} contexts on "
                                     f"gpu{vgpu.phys.index} (contexts_per_user)")


def pinned_bytes(handle: Handle) -> int:
    """Pinned host bytes ``handle`` allocated (not those it references with gref)."""
    return sum(obj.size for obj in handle.space.objects.pinned if not obj.ref)


def check_pinned(handle: Handle, need: int) -> None:
    """Raise ENOMEM if ``handle`` may not pin ``need`` more bytes."""
    limit = handle.system.config.pinned_per_session
    have = pinned_bytes(handle)
    if have + need > limit:
        raise GdevError(errno.ENOMEM, f"context {handle.cid}: {need} pinned bytes over its "
                                      f"limit ({have}/{limit} used, pinned_per_session)")


def queued_launches(handle: Handle) -> int:
    """Launches of ``handle`` queued or running."""
    return sum(1 for fence in handle.pending.values() if fence.kind == "launch")


async def launch_slot(handle: Handle) -> None:
    """Wait until ``handle`` has fewer than ``launches_queued_max`` launches in flight.

    Returns with no checkpoint after the last count, so the caller can enqueue at once.
    EBADF if the handle closes meanwhile.
    """
    limit = handle.system.config.launches_queued_max
    while queued_launches(handle) >= limit:
        oldest = next(f for f in handle.pending.values() if f.kind == "launch")
        await oldest.done.wait()
        handle.check_open()


def limits_text(system: GdevSystem) -> str:
    """``/proc/gdev/limits``: each limit with its value, then the use per uid."""
    c = system.config
    lines = [f"{name:<20} {getattr(c, name)}" for name in (
        "contexts_max", "contexts_reserved", "contexts_per_user", "pinned_per_session",
        "launches_queued_max", "shm_per_user", "preauth_max", "preauth_per_uid",
        "preauth_timeout_s")]
    contexts = Counter(h.cred.uid for h in system.handles.values())
    pinned: Counter[int] = Counter()
    for h in system.handles.values():
        pinned[h.cred.uid] += pinned_bytes(h)
    shm = Counter(seg.cuid for seg in system.shm.segments.values()) if system.shm else Counter()
    stats = getattr(system, "admission", None)  # the ioctl server's, when one serves
    if stats is not None:
        lines.append(f"{'preauth_now':<20} {stats.preauth}")
        lines.append(f"{'preauth_refused':<20} {stats.refused}")
        lines.append(f"{'preauth_timed_out':<20} {stats.timed_out}")
        lines.append(f"{'accept_errors':<20} {stats.accept_errors}")
    lines.append("uid contexts pinned shm")
    for uid in sorted(set(contexts) | set(shm)):
        lines.append(f"{uid} {contexts[uid]} {pinned[uid]} {shm[uid]}")
    return "\n".join(lines) + "\n"
