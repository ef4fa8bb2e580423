"""Verbs for streams (not in Gdev, whose contexts are one channel each): create, destroy,
order one stream behind a fence (cuStreamWaitEvent), and wait for one stream.

How streams order work and run side by side: ``streams.py``.  Launches and ``_async``
copies take the stream as their last argument (``glaunch(h, k, stream)``).
"""

from __future__ import annotations

import errno

import trio

from ..errors import GdevError
from .api_exec import check_timeout, wait_all
from .handle import Handle, check_handle
from .streams import LEGACY


async def gstream_create(handle: Handle, flags: int = 0) -> int:
    """Create a stream of the context; its id (>= 1).

    ``flags`` 0 (a blocking stream: ordered against the legacy stream 0, as CUDA's
    default streams are) or ``STREAM_NON_BLOCKING``.  Errors: EBADF; EINVAL (unknown
    flags); EMFILE (the context has ``STREAMS_MAX`` streams); the sticky error once a
    kernel of the context faulted.
    """
    check_handle(handle)
    await trio.lowlevel.checkpoint()
    handle.check_kernel_fault()
    return handle.streams.create(flags)


async def gstream_destroy(handle: Handle, stream: int) -> None:
    """Destroy ``stream``; the work issued in it still runs (and ``gbarrier`` waits for it).

    Errors: EBADF; EINVAL (no such stream, or the legacy stream 0).
    """
    check_handle(handle)
    await trio.lowlevel.checkpoint()
    handle.streams.destroy(stream)


async def gstream_wait(handle: Handle, stream: int, fence_id: int) -> None:
    """Make the work issued later in ``stream`` wait until operation ``fence_id`` (of any
    stream of this context) is done; returns at once.  A fence no longer in flight (or 0)
    orders nothing.

    Errors: EBADF; EINVAL (no such stream, or an id out of range).
    """
    check_handle(handle)
    st = handle.streams.get(stream)
    if isinstance(fence_id, bool) or not isinstance(fence_id, int) or \
            not 0 <= fence_id < 4096:
        raise GdevError(errno.EINVAL, f"fence id out of range: {fence_id!r}")
    await trio.lowlevel.checkpoint()
    fence = handle.pending.get(fence_id) if fence_id else None
    if fence is not None:
        handle.streams.join(st, fence.done)


async def gstream_sync(handle: Handle, stream: int, timeout: float | None = None) -> None:
    """Wait until the work issued so far in ``stream`` is done (for the legacy stream 0:
    with every blocking stream's, as CUDA's legacy stream).  ``timeout`` 0 polls
    (cuStreamQuery).

    Errors: EBADF; EINVAL (no such stream, bad timeout); ETIME (not done within
    ``timeout``); the context's sticky fault.
    """
    check_handle(handle)
    check_timeout(timeout)
    st = handle.streams.get(stream)
    events = handle.streams.deps(st) if st.id == LEGACY else st.after()
    await wait_all(events, timeout, f"stream {stream}")
    handle.check_fault()
