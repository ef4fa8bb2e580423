"""Gdev verbs for shared device memory: gshmget, gshmat, gshmdt, gshmctl (System V style).

The semantics are those of ``shmget(2)``, ``shmat(2)``, ``shmdt(2)`` and ``shmctl(2)``,
with the credentials of the process that opened the device file; the segment table and
its permission rules are :mod:`.mm.shm`.  A segment's memory is charged to its creator's vGPU
and may be swapped out like any other device memory.
"""

from __future__ import annotations

import dataclasses
import errno
from typing import Any

import trio

from ..errors import GdevError
from . import constants as C
from .api_mem import map_new, new_block
from .handle import Handle, check_handle
from .mm.shm import ShmidDs
from .mm.swap import settle
from .teardown import drop_segment, release_block, settle_object, unmap_object


async def gshmget(handle: Handle, key: int, size: int, flags: int) -> int:
    """Get the id of the segment ``key``, creating it as ``flags`` say.

    ``key`` is ``GDEV_IPC_PRIVATE`` (always a new segment) or any other 32-bit integer;
    ``flags`` holds the mode bits (0o777) and ``GDEV_IPC_CREAT``/``GDEV_IPC_EXCL``.
    Errors: EBADF; EINVAL (bad arguments, size 0 for a new segment, or larger than the
    existing one); ENOENT (no such key, no IPC_CREAT); EEXIST (IPC_CREAT|IPC_EXCL on an
    existing key); EACCES (the mode denies the requested bits); ENOMEM; ENOSPC (table full, or
    the user's ``shm_per_user`` reached).
    """
    await trio.lowlevel.checkpoint()
    check_handle(handle)
    table = handle.system.shm
    seg = table.check_get(key, size, flags)
    if seg is not None:
        seg.check(handle.cred, flags & 0o777)
        return seg.id
    table.check_room(handle.cred)  # before allocating: a refusal changes nothing
    block = await new_block(handle, size)
    check_handle(handle)
    again = table.check_get(key, size, flags)        # the key may have appeared meanwhile
    if again is not None:
        release_block(handle.system, block)
        again.check(handle.cred, flags & 0o777)
        return again.id
    try:
        return table.add(key, block, handle, flags & 0o777).id
    except BaseException:
        release_block(handle.system, block)
        raise


async def gshmat(handle: Handle, shmid: int, addr: int = 0, flags: int = 0) -> int:
    """Attach segment ``shmid`` to the context; return its GPU virtual address.

    ``addr`` and ``flags`` must be 0 (the address is chosen; no SHM_RDONLY).  Errors:
    EBADF; EINVAL (no such segment, nonzero addr/flags, another physical GPU); EACCES
    (needs read and write permission).
    """
    await trio.lowlevel.checkpoint()
    check_handle(handle)
    if addr != 0 or flags != 0:
        raise GdevError(errno.EINVAL, "gshmat supports addr=0 and flags=0 only")
    table = handle.system.shm
    seg = table.get(shmid)
    if seg.secret is not None:
        raise GdevError(errno.EINVAL, f"shm {shmid} is an exported allocation: import it "
                                      "with its shareable handle")
    seg.check(handle.cred, 0o666)
    if seg.block.gpu is not handle.phys:
        raise GdevError(errno.EINVAL, f"shm {shmid} lives on another physical GPU")
    await settle(seg.block)
    check_handle(handle)
    if table.segments.get(shmid) is not seg:
        raise GdevError(errno.EINVAL, f"shm {shmid} was destroyed meanwhile")
    obj = map_new(handle, seg.block, ref=True)
    obj.shm = seg
    table.attached(seg, handle, obj)
    return obj.va


async def gshmdt(handle: Handle, addr: int) -> None:
    """Detach the segment attached at ``addr`` (the address gshmat returned).

    Waits for the context's earlier copies and launches.  Errors: EBADF; EINVAL (no
    segment attached at exactly ``addr``).
    """
    check_handle(handle)
    async with handle.exclusive():
        handle.check_open()
        obj = handle.space.objects.find(addr) if type(addr) is int else None
        if obj is None or obj.shm is None or obj.va != addr or obj.shm.ipc:
            raise GdevError(errno.EINVAL, f"no shared segment attached at {addr!r} (an "
                                          "opened IPC allocation is closed by gipc_close)")
        await settle_object(handle, obj)
        unmap_object(handle, obj)


async def gshmctl(handle: Handle, shmid: int, cmd: int, buf: Any = None) -> ShmidDs | None:
    """Control segment ``shmid``: ``GDEV_IPC_STAT`` returns its :class:`ShmidDs`;
    ``GDEV_IPC_SET`` takes ``uid``, ``gid`` and ``mode`` (low 9 bits) from ``buf`` (a
    ShmidDs or a mapping); ``GDEV_IPC_RMID`` removes it (at the last detach).

    Errors: EBADF; EINVAL (no such segment, unknown cmd, bad buf); EACCES (STAT without
    read permission); EPERM (SET/RMID by someone not the owner, creator or root).
    """
    await trio.lowlevel.checkpoint()
    check_handle(handle)
    table = handle.system.shm
    seg = table.get(shmid)
    if cmd == C.GDEV_IPC_STAT:
        seg.check(handle.cred, 0o444)
        return seg.stat()
    if cmd not in (C.GDEV_IPC_SET, C.GDEV_IPC_RMID):
        raise GdevError(errno.EINVAL, f"unknown gshmctl command {cmd!r}")
    if not seg.is_owner(handle.cred):
        raise GdevError(errno.EPERM, f"uid {handle.cred.uid} does not own shm {shmid}")
    if cmd == C.GDEV_IPC_SET:
        uid, gid, mode = _set_fields(buf)
        seg.uid, seg.gid, seg.mode = uid, gid, mode & 0o777
        return None
    for due in table.remove(seg):
        drop_segment(handle.system, due)
    return None


def _set_fields(buf: Any) -> tuple[int, int, int]:
    if dataclasses.is_dataclass(buf):
        buf = dataclasses.asdict(buf)  # type: ignore[arg-type]
    try:
        values = tuple(buf[k] for k in ("uid", "gid", "mode"))
    except (TypeError, KeyError):
        raise GdevError(errno.EINVAL, "IPC_SET needs uid, gid and mode") from None
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 1 << 32:
            raise GdevError(errno.EINVAL, f"IPC_SET value out of range: {v!r}")
    return values  # type: ignore[return-value]
