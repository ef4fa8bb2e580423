"""Device and pinned host memory, memset and memcpy (cuMem*).

Device pointers (CUdeviceptr) are plain ints: addresses in the context's Gdev address space.
Host memory is any contiguous buffer (numpy array, bytes, bytearray, memoryview); pinned host
memory comes from cuMemAllocHost / cuMemHostAlloc as a numpy uint8 array (Gdev's
``gmalloc_dma``), and only copies from or to it are truly asynchronous, as in Gdev.

Every copy runs in its stream's channel of the context's Gdev handle (see ``stream.py``): a
synchronous copy (the legacy stream) starts after the work it is ordered behind and has
completed on return; an async one from or to pinned memory returns a fence that its stream
records, and runs beside the other streams' work.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..buffers import BufferProblem, byte_view
from ..constants import GDEV_QUERY_DEVICE_MEM_FREE, GDEV_QUERY_DEVICE_MEM_SIZE
from .core import DriverCore
from .errors import CUresult, api, copy_api, fail

CU_MEMHOSTALLOC_PORTABLE = 0x1
CU_MEMHOSTALLOC_DEVICEMAP = 0x2
CU_MEMHOSTALLOC_WRITECOMBINED = 0x4
MEMSET_CHUNK = 4 * 1024 * 1024  # bytes of pattern uploaded per gmemcpy_to_device



def host_nbytes(buf: Any, writable: bool) -> int:
    """Size in bytes of a contiguous host buffer; INVALID_VALUE if unusable."""
    try:
        return byte_view(buf, writable=writable).nbytes
    except BufferProblem as e:
        raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, str(e)) from None


def copy_size(buf: Any, size: int | None, writable: bool) -> int:
    """The byte count of a copy: ``size`` if given (at most the buffer), else the buffer's."""
    n = host_nbytes(buf, writable)
    if size is None:
        return n
    if size < 0 or size > n:
        raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"size {size} vs host buffer of {n}")
    return size


def pinned_array(buf: Any) -> np.ndarray:
    """The bytes of a buffer from ``gmalloc_dma`` as a numpy uint8 array (no copy)."""
    if isinstance(buf, np.ndarray):
        return buf
    arr = getattr(buf, "array", None)  # DmaBuffer of the runtime and of libgdev
    return arr if isinstance(arr, np.ndarray) else np.asarray(memoryview(buf))


def _pattern(value: int, itemsize: int, count: int) -> np.ndarray:
    dtype = {1: np.uint8, 2: np.uint16, 4: np.uint32}[itemsize]
    if not 0 <= value < 1 << (8 * itemsize):
        raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"memset value {value:#x}")
    return np.full(count, value, dtype=dtype)


class MemoryAPI(DriverCore):
    """cuMem* entry points (mixed into the driver)."""

    @api
    def cuMemAlloc(self, bytesize: int) -> int:
        """Allocate ``bytesize`` bytes of device memory; returns the CUdeviceptr."""
        ctx = self._current()
        if bytesize <= 0:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"size {bytesize}")
        addr = int(ctx.backend.gmalloc(ctx.handle, bytesize))
        ctx.mem[addr] = bytesize
        return addr

    @api
    def cuMemFree(self, dptr: int) -> None:
        """Free the allocation ``dptr`` (its base address, as cuMemAlloc returned it).

        Work issued before still completes first: the runtime drains the handle.
        """
        ctx = self._current()
        if dptr not in ctx.mem:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"{dptr:#x} is no cuMemAlloc pointer")
        ctx.backend.gfree(ctx.handle, dptr)
        del ctx.mem[dptr]

    @api
    def cuMemGetAddressRange(self, dptr: int) -> tuple[int, int]:
        """(base, size) of the cuMemAlloc allocation containing ``dptr``."""
        ctx = self._current()
        for base, size in ctx.mem.items():
            if base <= dptr < base + size:
                return base, size
        raise fail(CUresult.CUDA_ERROR_NOT_FOUND, f"{dptr:#x} is in no allocation")

    @api
    def cuMemAllocHost(self, bytesize: int) -> np.ndarray:
        """Allocate pinned host memory (Gdev's gmalloc_dma): a numpy uint8 array."""
        return self.cuMemHostAlloc(bytesize, 0)

    @api
    def cuMemHostAlloc(self, bytesize: int, flags: int = 0) -> np.ndarray:
        """Pinned host memory; DEVICEMAP is implied, WRITECOMBINED is a hint.

        PORTABLE: the buffer is this context's (its device pointer is this context's); every
        other context copies from and to it as from any host memory, and may free it.
        """
        ctx = self._current()
        if flags & ~(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP
                     | CU_MEMHOSTALLOC_WRITECOMBINED):
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"flags {flags:#x}")
        if bytesize <= 0:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"size {bytesize}")
        buf = ctx.backend.gmalloc_dma(ctx.handle, bytesize)
        arr = pinned_array(buf)[:bytesize]  # the runtime rounds up to whole pages
        ctx.host[id(arr)] = (arr, buf)
        return arr

    @api
    def cuMemFreeHost(self, buf: np.ndarray) -> None:
        """Free pinned host memory from cuMemAllocHost/cuMemHostAlloc, through the context
        that allocated it (a portable buffer may be freed from another context)."""
        ctx = self._current()
        owner = next((c for c in [ctx, *self.contexts] if not c.destroyed
                      and (e := c.host.get(id(buf))) is not None and e[0] is buf), None)
        if owner is None:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, "not pinned memory of a context")
        ctx, entry = owner, owner.host[id(buf)]
        ctx.backend.gfree_dma(ctx.handle, entry[1])  # the runtime drains the handle first
        del ctx.host[id(buf)]

    @api
    def cuMemHostGetDevicePointer(self, buf: np.ndarray, flags: int = 0) -> int:
        """The device address of pinned host memory (Gdev's gvirtget)."""
        ctx = self._current()
        if flags != 0:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"flags {flags:#x}")
        return int(ctx.backend.gvirtget(ctx.handle, buf))

    @api
    def cuMemGetInfo(self) -> tuple[int, int]:
        """(free, total) device memory of the current context's vGPU."""
        ctx = self._current()
        total = int(ctx.backend.gquery(ctx.handle, GDEV_QUERY_DEVICE_MEM_SIZE))
        free = int(ctx.backend.gquery(ctx.handle, GDEV_QUERY_DEVICE_MEM_FREE))
        return free, total

    # ---- memset -------------------------------------------------------------------------
    def _memset(self, dst: int, value: int, count: int, itemsize: int, hstream: Any) -> None:
        s = self._stream(hstream)
        if count < 0:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"count {count}")
        if dst % itemsize:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"misaligned {dst:#x}")
        per_chunk = MEMSET_CHUNK // itemsize
        pattern = _pattern(value, itemsize, min(count, per_chunk))
        with s.ctx.lock:  # pageable source: each piece completes in handle order
            done = 0
            while done < count:
                n = min(per_chunk, count - done)
                s.ctx.backend.gmemcpy_to_device(
                    s.ctx.handle, dst + done * itemsize, pattern, n * itemsize, s.sid)
                done += n

    @copy_api
    def cuMemsetD8(self, dst: int, value: int, count: int) -> None:
        """Set ``count`` bytes at ``dst`` to ``value``."""
        self._memset(dst, value, count, 1, None)

    @copy_api
    def cuMemsetD16(self, dst: int, value: int, count: int) -> None:
        """Set ``count`` 16-bit words at ``dst`` (2-byte aligned) to ``value``."""
        self._memset(dst, value, count, 2, None)

    @copy_api
    def cuMemsetD32(self, dst: int, value: int, count: int) -> None:
        """Set ``count`` 32-bit words at ``dst`` (4-byte aligned) to ``value``."""
        self._memset(dst, value, count, 4, None)

    @copy_api
    def cuMemsetD8Async(self, dst: int, value: int, count: int, hstream: Any) -> None:
        """cuMemsetD8 ordered in ``hstream``."""
        self._memset(dst, value, count, 1, hstream)

    @copy_api
    def cuMemsetD16Async(self, dst: int, value: int, count: int, hstream: Any) -> None:
        """cuMemsetD16 ordered in ``hstream``."""
        self._memset(dst, value, count, 2, hstream)

    @copy_api
    def cuMemsetD32Async(self, dst: int, value: int, count: int, hstream: Any) -> None:
        """cuMemsetD32 ordered in ``hstream``."""
        self._memset(dst, value, count, 4, hstream)

    # ---- memcpy -------------------------------------------------------------------------
    @copy_api
    def cuMemcpyHtoD(self, dst: int, src: Any, size: int | None = None) -> None:
        """Copy ``size`` bytes (default: all of ``src``) from host ``src`` to device ``dst``."""
        n = copy_size(src, size, writable=False)
        ctx = self._current()
        if n:
            ctx.backend.gmemcpy_to_device(ctx.handle, dst, src, n)
        ctx.flush_printf()

    @copy_api
    def cuMemcpyDtoH(self, dst: Any, src: int, size: int | None = None) -> None:
        """Copy ``size`` bytes (default: all of ``dst``) from device ``src`` into host ``dst``."""
        n = copy_size(dst, size, writable=True)
        ctx = self._current()
        if n:
            ctx.backend.gmemcpy_from_device(ctx.handle, dst, src, n)
        ctx.flush_printf()

    @copy_api
    def cuMemcpyDtoD(self, dst: int, src: int, size: int) -> None:
        """Copy ``size`` bytes between two device addresses of the current context."""
        if size < 0:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"size {size}")
        ctx = self._current()
        if size:
            ctx.backend.gmemcpy(ctx.handle, dst, src, size)
        ctx.flush_printf()

    @copy_api
    def cuMemcpy(self, dst: int, src: int, size: int) -> None:
        """Copy in the context's unified address space: device or pinned memory, either side
        (pinned memory by its cuMemHostGetDevicePointer address)."""
        self.cuMemcpyDtoD(dst, src, size)

    @copy_api
    def cuMemcpyAsync(self, dst: int, src: int, size: int, hstream: Any) -> None:
        """cuMemcpy ordered in ``hstream``."""
        self.cuMemcpyDtoDAsync(dst, src, size, hstream)

    def _async_copy(self, hstream: Any, issue: Any, size: int) -> None:
        s = self._stream(hstream)
        if not size:
            return  # CUDA: copying nothing succeeds
        with s.ctx.lock:
            s.record(int(issue(s.ctx, s.sid) or 0))

    @copy_api
    def cuMemcpyHtoDAsync(self, dst: int, src: Any, size: int | None, hstream: Any) -> None:
        """Async HtoD in ``hstream``; truly async only from pinned memory (else synchronous)."""
        n = copy_size(src, size, writable=False)
        self._async_copy(hstream, lambda c, sid: c.backend.gmemcpy_to_device_async(
            c.handle, dst, src, n, sid), n)

    @copy_api
    def cuMemcpyDtoHAsync(self, dst: Any, src: int, size: int | None, hstream: Any) -> None:
        """Async DtoH in ``hstream``; truly async only into pinned memory."""
        n = copy_size(dst, size, writable=True)
        self._async_copy(hstream, lambda c, sid: c.backend.gmemcpy_from_device_async(
            c.handle, dst, src, n, sid), n)

    @copy_api
    def cuMemcpyDtoDAsync(self, dst: int, src: int, size: int, hstream: Any) -> None:
        """Async DtoD in ``hstream``."""
        if size < 0:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"size {size}")
        self._async_copy(hstream, lambda c, sid: c.backend.gmemcpy_async(
            c.handle, dst, src, size, sid), size)
