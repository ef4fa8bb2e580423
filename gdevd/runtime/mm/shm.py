"""Shared device memory with System V semantics: the segment table behind gshmget/at/dt/ctl.

Theory of operation
-------------------
A segment is a device block (charged to the vGPU of the context that created it, like any
allocation, and swappable like any) plus its IPC record: key, id, owner and creator
uid/gid, mode, times and pids.  The table is system wide (Gdev's ``gdev_shm_owners[512]``);
an id is ``seq * SHM_SEGMENTS + slot`` so a stale id does not name a new segment.  A
non-root user creates at most ``shm_per_user`` of the slots (the config's per-tenant limit).

Permissions are Linux's ``ipcperms``: root passes; otherwise the owner (uid or creator
uid) gets the mode's user bits, a member of the group (gid or creator gid) the group bits,
anyone else the other bits.  ``gshmget`` of an existing key checks the requested mode bits,
``gshmat`` read and write, ``IPC_STAT`` read; ``IPC_SET`` and ``IPC_RMID`` need the owner,
the creator or root (EPERM).  Credentials are those of the process that opened the device
file (``handle.cred``).

Lifetime: the table holds one reference on the block, each attachment one more.
``IPC_RMID`` makes the key private at once and destroys the segment at the last detach.
When the creating context closes, its segments are marked for removal the same way (Linux's
``kernel.shm_rmid_forced=1``), so closing every context always returns every byte.
"""

from __future__ import annotations

import dataclasses
import errno
import time
from typing import TYPE_CHECKING

from ...errors import GdevError
from .. import constants as C
from .. import defaults as D
from .memory import DeviceBlock, MemObject

if TYPE_CHECKING:
    from ..handle import Handle
    from ..system import Credentials, GdevSystem

_GET_FLAGS = 0o777 | C.GDEV_IPC_CREAT | C.GDEV_IPC_EXCL


@dataclasses.dataclass
class ShmidDs:
    """A segment's record as ``IPC_STAT`` reports it (``struct shmid_ds``)."""

    key: int
    id: int
    size: int
    uid: int
    gid: int
    cuid: int
    cgid: int
    mode: int
    nattch: int
    cpid: int
    lpid: int
    atime: int
    dtime: int
    ctime: int


class Segment:
    """One shared segment: its block, IPC record and attachments."""

    def __init__(self, sid: int, key: int, block: DeviceBlock, creator: Handle,
                 mode: int) -> None:
        self.id, self.key, self.block, self.creator = sid, key, block, creator
        cred = creator.cred
        self.uid = self.cuid = cred.uid
        self.gid = self.cgid = cred.gid
        self.mode, self.cpid, self.lpid = mode & 0o777, cred.pid, 0
        self.atime = self.dtime = 0
        self.ctime = int(time.time())
        self.attached: list[tuple[Handle, MemObject]] = []
        self.removed = False
        self.secret: bytes | None = None    # an exported allocation's (api_vmmshare.py)
        self.ipc = False                    # a CUDA IPC export (api_ipc.py, ipc.py)
        block.refs += 1
        block.shm = self

    def stat(self) -> ShmidDs:
        """The ``IPC_STAT`` record."""
        return ShmidDs(self.key, self.id, self.block.size, self.uid, self.gid, self.cuid,
                       self.cgid, self.mode, len(self.attached), self.cpid, self.lpid,
                       self.atime, self.dtime, self.ctime)

    def is_owner(self, cred: Credentials) -> bool:
        """Owner, creator or root (who may IPC_SET and IPC_RMID)."""
        return cred.uid == 0 or cred.uid in (self.uid, self.cuid)

    def check(self, cred: Credentials, requested: int) -> None:
        """Linux ``ipcperms``: EACCES unless ``cred`` has the ``requested`` rwx bits."""
        if cred.uid == 0:
            return
        want = ((requested >> 6) | (requested >> 3) | requested) & 0o7
        if cred.uid in (self.uid, self.cuid):
            granted = self.mode >> 6
        elif cred.gid in (self.gid, self.cgid):
            granted = self.mode >> 3
        else:
            granted = self.mode
        if want & ~granted & 0o7:
            raise GdevError(errno.EACCES, f"shm {self.id}: mode {self.mode:o} denies uid "
                                          f"{cred.uid} access {requested:o}")


class ShmTable:
    """All segments of the system, by id (see the module docstring)."""

    def __init__(self, system: GdevSystem) -> None:
        self.system = system
        self.segments: dict[int, Segment] = {}
        self._seq = [0] * D.SHM_SEGMENTS

    def by_key(self, key: int) -> Segment | None:
        """The live segment with ``key`` (never for IPC_PRIVATE or removed ones)."""
        for seg in self.segments.values():
            if seg.key == key and not seg.removed:
                return seg
        return None

    def get(self, sid: object) -> Segment:
        """The segment ``sid``; EINVAL if there is none (as shmat/shmctl answer)."""
        seg = self.segments.get(sid) if type(sid) is int else None
        if seg is None:
            raise GdevError(errno.EINVAL, f"no shared segment {sid!r}")
        return seg

    def check_get(self, key: object, size: object, flags: object) -> Segment | None:
        """Validate gshmget's arguments; the existing segment for ``key`` if it should be
        returned, None if one must be created."""
        for name, v in (("key", key), ("size", size), ("flags", flags)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise GdevError(errno.EINVAL, f"{name} must be an integer: {v!r}")
        assert isinstance(key, int) and isinstance(size, int) and isinstance(flags, int)
        if not -(1 << 31) <= key < 1 << 31 or flags & ~_GET_FLAGS or flags < 0 or size < 0:
            raise GdevError(errno.EINVAL, f"bad gshmget arguments key={key} flags={flags:#o}")
        seg = None if key == C.GDEV_IPC_PRIVATE else self.by_key(key)
        if seg is None:
            if key != C.GDEV_IPC_PRIVATE and not flags & C.GDEV_IPC_CREAT:
                raise GdevError(errno.ENOENT, f"no shared segment with key {key:#x}")
            if size == 0:
                raise GdevError(errno.EINVAL, "a new segment needs a size > 0")
            return None
        if flags & C.GDEV_IPC_CREAT and flags & C.GDEV_IPC_EXCL:
            raise GdevError(errno.EEXIST, f"key {key:#x} exists (shm {seg.id})")
        if size > seg.block.size:
            raise GdevError(errno.EINVAL, f"shm {seg.id} has {seg.block.size} bytes < {size}")
        return seg

    def check_room(self, cred: Credentials) -> None:
        """ENOSPC if ``cred`` may not create one more segment: every slot is taken, or a
        non-root user already holds ``shm_per_user`` (removed but attached ones count)."""
        if len(self.segments) >= D.SHM_SEGMENTS:
            raise GdevError(errno.ENOSPC, f"all {D.SHM_SEGMENTS} shared segments in use")
        limit = self.system.config.shm_per_user
        if cred.uid != 0 and sum(s.cuid == cred.uid for s in self.segments.values()) >= limit:
            raise GdevError(errno.ENOSPC, f"uid {cred.uid} holds {limit} shared segments "
                                          "(shm_per_user)")

    def add(self, key: int, block: DeviceBlock, creator: Handle, mode: int) -> Segment:
        """Enter a new segment; ENOSPC as :meth:`check_room` says."""
        self.check_room(creator.cred)
        used = {sid % D.SHM_SEGMENTS for sid in self.segments}
        slot = next((i for i in range(D.SHM_SEGMENTS) if i not in used), None)
        if slot is None:
            raise GdevError(errno.ENOSPC, f"all {D.SHM_SEGMENTS} shared segments in use")
        sid = self._seq[slot] * D.SHM_SEGMENTS + slot
        self._seq[slot] = (self._seq[slot] + 1) % (1 << 20)
        seg = Segment(sid, key, block, creator, mode)
        self.segments[sid] = seg
        return seg

    def attached(self, seg: Segment, handle: Handle, obj: MemObject) -> None:
        """Record an attachment."""
        seg.attached.append((handle, obj))
        seg.atime, seg.lpid = int(time.time()), handle.cred.pid

    def detached(self, seg: Segment, handle: Handle, obj: MemObject) -> list[Segment]:
        """Record a detachment; the segments now due for destruction."""
        seg.attached = [(h, o) for h, o in seg.attached if o is not obj]
        seg.dtime, seg.lpid = int(time.time()), handle.cred.pid
        return self._due(seg)

    def remove(self, seg: Segment) -> list[Segment]:
        """Mark for removal (IPC_RMID): private at once, destroyed at the last detach."""
        seg.removed = True
        seg.key = C.GDEV_IPC_PRIVATE
        seg.ctime = int(time.time())
        return self._due(seg)

    def creator_closed(self, handle: Handle) -> list[Segment]:
        """Mark the segments ``handle`` created for removal; those now due."""
        due: list[Segment] = []
        for seg in list(self.segments.values()):
            if seg.creator is handle:
                due += self.remove(seg)
        return due

    def _due(self, seg: Segment) -> list[Segment]:
        if seg.removed and not seg.attached and seg.id in self.segments:
            del self.segments[seg.id]
            return [seg]
        return []

    def listing(self) -> str:
        """``/proc/gdev/shm``: one line per segment, like ``/proc/sysvipc/shm``."""
        lines = ["       key      shmid       size  uid  gid cuid cgid perms nattch "
                 "resident  swapped vgpu"]
        for seg in sorted(self.segments.values(), key=lambda s: s.id):
            b = seg.block
            lines.append(f"{seg.key:10d} {seg.id:10d} {b.size:10d} {seg.uid:4d} {seg.gid:4d} "
                         f"{seg.cuid:4d} {seg.cgid:4d} {seg.mode:5o} {len(seg.attached):6d} "
                         f"{b.resident_bytes:8d} {b.size - b.resident_bytes:8d} "
                         f"{b.vgpu.minor:4d}")
        return "\n".join(lines) + "\n"
