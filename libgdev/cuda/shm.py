"""cuShmGet/At/Dt/Ctl: Gdev's shared device memory in the CUDA driver API (Gdev's own
extension; written once, bound to libgdev and to kcuda like the rest of the driver).

Semantics are those of ``gshmget``/``gshmat``/``gshmdt``/``gshmctl`` (System V): keys and
flags use ``GDEV_IPC_PRIVATE``, ``GDEV_IPC_CREAT``, ``GDEV_IPC_EXCL`` and mode bits; errors
map through the one errno -> CUresult table (ENOMEM -> CUDA_ERROR_OUT_OF_MEMORY, EACCES and
EPERM -> CUDA_ERROR_NOT_PERMITTED, ENOENT/EEXIST/EINVAL ->
CUDA_ERROR_INVALID_VALUE).
"""

from __future__ import annotations

from typing import Any

from .core import DriverCore
from .errors import CUresult, api, fail

CU_IPC_STAT = 1          # GDEV_IPC_STAT
CU_IPC_SET = 2           # GDEV_IPC_SET
CU_IPC_RMID = 3          # GDEV_IPC_RMID
CU_IPC_PRIVATE = 0
CU_IPC_CREAT = 0o1000
CU_IPC_EXCL = 0o2000


class ShmAPI(DriverCore):
    """cuShm* entry points (mixed into the driver)."""

    @api
    def cuShmGet(self, key: int, size: int, flags: int) -> int:
        """The id of shared device segment ``key`` (created as ``flags`` say)."""
        ctx = self._current()
        return int(ctx.backend.gshmget(ctx.handle, key, size, flags))

    @api
    def cuShmAt(self, shmid: int, flags: int = 0) -> int:
        """Attach segment ``shmid`` to the current context; its CUdeviceptr."""
        ctx = self._current()
        return int(ctx.backend.gshmat(ctx.handle, shmid, 0, flags))

    @api
    def cuShmDt(self, dptr: int) -> None:
        """Detach the segment attached at ``dptr`` (work issued before completes first)."""
        ctx = self._current()
        ctx.backend.gshmdt(ctx.handle, dptr)

    @api
    def cuShmCtl(self, shmid: int, cmd: int, buf: Any = None) -> Any:
        """CU_IPC_STAT: the segment's record (key, id, size, uid, gid, cuid, cgid, mode,
        nattch, cpid, lpid, atime, dtime, ctime); CU_IPC_SET: uid, gid, mode from ``buf``;
        CU_IPC_RMID: remove at the last detach."""
        ctx = self._current()
        if cmd == CU_IPC_SET and buf is None:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, "CU_IPC_SET needs a buffer")
        return ctx.backend.gshmctl(ctx.handle, shmid, cmd, buf)
