"""Copy engines: one DMA thread each (in C), synchronous pipelined copies and async jobs.

Theory of operation
-------------------
A synchronous host<->device copy (:meth:`CopyEngine.htod`, :meth:`CopyEngine.dtoh`) is
split into ``chunk``-byte pieces that flow through ``depth`` slots of a caller-owned bounce
buffer, as in Gdev: for host to device the calling thread copies chunk *k* into slot
*k % depth* while the engine thread drains earlier slots into device memory; depth 1 is the
unpipelined copy -> DMA -> wait loop.  The whole device range is validated first, so a
fault raises :class:`~gdevd.errors.MmuFault` before a byte moves.  The GIL is released for
the whole copy.

Async jobs (``submit_*``) copy without bounce buffers (pinned host memory, device to
device), complete in submission order, and signal completion through a condition variable
(:meth:`CopyEngine.wait`) and an eventfd (:meth:`CopyEngine.fileno`), never by polling.
The caller keeps host buffers alive until the job completes; this wrapper keeps the address
spaces and buffers referenced until then too.
"""

from __future__ import annotations

import dataclasses
import errno
import os
from types import TracebackType
from typing import Any

import numpy as np

from gdevd.errors import GdevError
from gdevd.gpu._core import ffi, lib
from gdevd.gpu._cutil import as_int, check, check_fault, readable, writable
from gdevd.gpu.mmu import Mmu

CHUNK_MIN = lib.GDEV_CHUNK_MIN
CHUNK_MAX = lib.GDEV_CHUNK_MAX
DEPTH_MAX = lib.GDEV_DEPTH_MAX
#: chunk used by dtod when the caller names none
DTOD_CHUNK = 4 << 20


@dataclasses.dataclass(frozen=True)
class EngineStats:
    """A copy engine's counters (``/proc/gdev`` bandwidth utilisation is built on them)."""

    jobs: int  #: jobs run: async jobs and stages of synchronous copies
    bytes: int  #: bytes moved by jobs that succeeded
    busy_s: float  #: seconds the engine thread spent copying


def _bounce_ptr(bounce: Any, chunk: int, depth: int) -> tuple[Any, int]:
    """Check the tunables and the bounce buffer (np.uint8, >= chunk * depth bytes)."""
    chunk = as_int(chunk, "chunk", CHUNK_MIN, CHUNK_MAX)
    depth = as_int(depth, "depth", 1, DEPTH_MAX)
    if not isinstance(bounce, np.ndarray) or bounce.dtype != np.uint8:
        raise GdevError(errno.EINVAL, "bounce must be an np.uint8 array")
    ptr, size = writable(bounce, "bounce")
    if size < chunk * depth:
        raise GdevError(errno.EINVAL, f"bounce of {size} bytes < chunk*depth {chunk * depth}")
    return ptr, size


class CopyEngine:
    """A DMA engine named ``name`` with its own thread (see the module doc)."""

    def __init__(self, name: str) -> None:
        out = ffi.new("struct gdev_ce **")
        check(lib.gdev_ce_create(out), f"create copy engine {name}")
        self.name = name
        self._ce: Any = out[0]
        self._pending: dict[int, tuple[Any, ...]] = {}

    @property
    def _p(self) -> Any:
        if self._ce is None:
            raise GdevError(errno.EBADF, f"copy engine {self.name} is closed")
        return self._ce

    # -- synchronous copies ------------------------------------------------------------

    def htod(self, mmu: Mmu, dst_va: int, src: Any, *, chunk: int, depth: int,
             bounce: np.ndarray) -> None:
        """Copy all of buffer ``src`` to ``dst_va`` through ``bounce`` (see module doc)."""
        bptr, bsize = _bounce_ptr(bounce, chunk, depth)
        sptr, size = readable(src, "src")
        fault = ffi.new("uint64_t *")
        ret = lib.gdev_ce_htod(self._p, mmu._p, as_int(dst_va, "dst_va"), sptr, size, chunk,
                               depth, bptr, bsize, fault)
        check_fault(ret, fault[0], f"{self.name}: htod 0x{dst_va:x}+0x{size:x}")

    def dtoh(self, mmu: Mmu, dst: Any, src_va: int, *, chunk: int, depth: int,
             bounce: np.ndarray) -> None:
        """Fill writable buffer ``dst`` from ``src_va`` through ``bounce``."""
        bptr, bsize = _bounce_ptr(bounce, chunk, depth)
        dptr, size = writable(dst, "dst")
        fault = ffi.new("uint64_t *")
        ret = lib.gdev_ce_dtoh(self._p, mmu._p, dptr, as_int(src_va, "src_va"), size, chunk,
                               depth, bptr, bsize, fault)
        check_fault(ret, fault[0], f"{self.name}: dtoh 0x{src_va:x}+0x{size:x}")

    def dtod(self, mmu_dst: Mmu, dst_va: int, mmu_src: Mmu, src_va: int, size: int, *,
             chunk: int = DTOD_CHUNK, bounce: np.ndarray | None = None) -> None:
        """Copy ``size`` bytes between (possibly different) address spaces, chunk by chunk.

        Runs on the engine thread; ``bounce`` is accepted for symmetry and unused (a
        device-to-device copy needs no host staging).
        """
        chunk = as_int(chunk, "chunk", CHUNK_MIN, CHUNK_MAX)
        size = as_int(size, "size")
        fault, side = ffi.new("uint64_t *"), ffi.new("int *")
        ret = lib.gdev_ce_dtod(self._p, mmu_dst._p, as_int(dst_va, "dst_va"), mmu_src._p,
                               as_int(src_va, "src_va"), size, chunk, fault, side)
        check_fault(ret, fault[0], f"{self.name}: dtod 0x{src_va:x} -> 0x{dst_va:x}")

    @staticmethod
    def direct_htod(mmu: Mmu, dst_va: int, src: Any) -> None:
        """One copy without bounce buffers (small sizes, pinned buffers): ``mmu.write``."""
        mmu.write(dst_va, src)

    @staticmethod
    def direct_dtoh(mmu: Mmu, dst: Any, src_va: int) -> None:
        """One copy without bounce buffers: ``mmu.read_into``."""
        mmu.read_into(src_va, dst)

    # -- asynchronous jobs -------------------------------------------------------------

    def _submit(self, kind: int, dst: Mmu | None, dst_va: int, src: Mmu | None, src_va: int,
                host: Any, size: int, keep: tuple[Any, ...]) -> int:
        seq, fault, side = ffi.new("uint64_t *"), ffi.new("uint64_t *"), ffi.new("int *")
        ret = lib.gdev_ce_submit(self._p, kind, dst._p if dst else ffi.NULL, dst_va,
                                 src._p if src else ffi.NULL, src_va, host, size, seq, fault,
                                 side)
        check_fault(ret, fault[0], f"{self.name}: submit")
        self._pending[seq[0]] = keep
        return int(seq[0])

    def submit_htod(self, mmu: Mmu, dst_va: int, src: Any) -> int:
        """Queue a copy of buffer ``src`` to ``dst_va``; returns its sequence number.

        ``src`` is read when the job runs: keep it alive and unchanged until then.
        """
        ptr, size = readable(src, "src")
        return self._submit(lib.GDEV_CE_HTOD, mmu, as_int(dst_va, "dst_va"), None, 0, ptr,
                            size, (mmu, src, ptr))

    def submit_dtoh(self, mmu: Mmu, dst: Any, src_va: int) -> int:
        """Queue a copy from ``src_va`` filling writable buffer ``dst``; returns its seq."""
        ptr, size = writable(dst, "dst")
        return self._submit(lib.GDEV_CE_DTOH, None, 0, mmu, as_int(src_va, "src_va"), ptr,
                            size, (mmu, dst, ptr))

    def submit_dtod(self, mmu_dst: Mmu, dst_va: int, mmu_src: Mmu, src_va: int,
                    size: int) -> int:
        """Queue a device-to-device copy; returns its sequence number."""
        return self._submit(lib.GDEV_CE_DTOD, mmu_dst, as_int(dst_va, "dst_va"), mmu_src,
                            as_int(src_va, "src_va"), ffi.NULL, as_int(size, "size"),
                            (mmu_dst, mmu_src))

    def stats(self) -> EngineStats:
        """Counters since creation: jobs run, bytes moved, seconds busy copying."""
        jobs, nbytes, busy = ffi.new("uint64_t *"), ffi.new("uint64_t *"), ffi.new("uint64_t *")
        lib.gdev_ce_stats(self._p, jobs, nbytes, busy)
        return EngineStats(int(jobs[0]), int(nbytes[0]), busy[0] / 1e9)

    def queued(self) -> int:
        """Jobs queued or running: async ones and stages of synchronous copies."""
        return int(lib.gdev_ce_queued(self._p))

    def completed(self) -> int:
        """Highest sequence number completed (jobs complete in order); 0 if none."""
        done = int(lib.gdev_ce_completed(self._p))
        for seq in [s for s in list(self._pending) if s <= done]:  # other threads may submit
            self._pending.pop(seq, None)
        return done

    def wait(self, seq: int, timeout: float | None = None) -> bool:
        """Block (GIL released) until job ``seq`` completed; False on timeout.

        Raises the job's error (GdevError) if it failed, EINVAL for a seq never issued.
        """
        seq = as_int(seq, "seq", 1)
        ns = -1 if timeout is None else max(0, int(timeout * 1e9))
        job_err = ffi.new("int *")
        ret = lib.gdev_ce_wait(self._p, seq, ns, job_err)
        if ret == -errno.ETIMEDOUT:
            return False
        check(ret, f"{self.name}: wait for job {seq}")
        self.completed()
        if job_err[0] < 0 and job_err[0] != -errno.ENOENT:
            raise GdevError(-job_err[0], f"{self.name}: job {seq} failed")
        return True

    def error(self, seq: int) -> GdevError | None:
        """The error of completed job ``seq`` (None if it succeeded or is forgotten).

        EAGAIN if it has not completed, EINVAL if it was never issued.
        """
        ret = lib.gdev_ce_error(self._p, as_int(seq, "seq", 1))
        if ret in (0, -errno.ENOENT):
            return None
        if ret in (-errno.EAGAIN, -errno.EINVAL):
            raise GdevError(-ret, f"{self.name}: job {seq} has no result")
        return GdevError(-ret, f"{self.name}: job {seq} failed")

    def fileno(self) -> int:
        """An eventfd that is readable once an async job has completed since the last
        :meth:`drain_events` (for ``trio.lowlevel.wait_readable``)."""
        return int(lib.gdev_ce_fd(self._p))

    def drain_events(self) -> int:
        """Reset the eventfd; returns how many completions it had counted (0 if none)."""
        try:
            return int.from_bytes(os.read(self.fileno(), 8), "little")
        except BlockingIOError:
            return 0

    def hold(self, on: bool) -> None:
        """Hold (True) or release the engine: held, it finishes the current job and starts
        no other (synchronous copies on it then block until release).  For deterministic
        tests and for suspending a device."""
        lib.gdev_ce_hold(self._p, 1 if on else 0)

    def close(self) -> None:
        """Finish queued jobs, join the engine thread and free it (idempotent).

        Must not race with calls on this engine from other threads.
        """
        if getattr(self, "_ce", None) is not None:
            lib.gdev_ce_destroy(self._ce)
            self._ce = None
            self._pending.clear()

    def __enter__(self) -> CopyEngine:
        return self

    def __exit__(
        self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()
