"""Gdev verbs for copies: gmemcpy_to_device, gmemcpy_from_device, gmemcpy and _async forms.

Path selection (Gdev section 1.4, and the paper's Fig. 3/4):

1. ``size <= iowrite_limit`` (HtoD) or ``size <= ioread_limit`` (DtoH): **direct** I/O, one
   ``mmu.write``/``mmu.read`` on the trio thread (small copies cost less than a thread hop),
   charged to the memory resource and time-buffered for an over-share vGPU by the scheduler
   (``direct_begin``/``direct_end``).
2. the host side lies inside a pinned buffer of the context: **one** copy by the copy
   engine, no bounce buffers (the paper's PINCPY), completion by the engine's eventfd.
   Only this path is truly async: the ``_async`` forms return a fence id for it, and run
   every other path synchronously (ordered in their stream) and return 0, as Gdev does.
3. otherwise through the handle's bounce buffers on the copy engine: **pipelined** when
   ``pipeline_count > 1`` and ``size > chunk_size``, else **chunked** (one buffer at a time).
   One such copy at a time per context (``handle.bounce_lock``): streams share the buffers.

Every form takes a ``stream`` (``streams.py``; 0, the legacy stream, by default): a copy in
one stream overlaps a launch in another.

Device addresses must lie inside one object of the context (ENOENT if none contains the
start, EFAULT if the range runs past its end).  The host side is a
:class:`~.mm.hostmem.HostRange` built once (at the ioctl boundary, or here from any
C-contiguous buffer: numpy arrays, bytes, bytearray, memoryview, DmaBuffer, at least
``size`` bytes long), which says whether the bytes are pinned; no path searches for it.
"""

from __future__ import annotations

from typing import Any

import trio

from . import constants as C
from .api_mem import check_size
from .handle import Fence, Handle, check_handle
from .mm.hostmem import HostRange, describe
from .mm.residency import is_resident, read_swapped, touching
from .streams import LEGACY


def _count(handle: Handle, path: str, size: int) -> None:
    handle.counters.copies[path] += 1
    handle.counters.copies[path + "_bytes"] += size
    handle.system.scheduler.copied(handle, size)      # the scheduler's per-context/vGPU bytes


async def _direct(handle: Handle, path: str, size: int, fn: Any, *args: Any) -> None:
    """Run a small copy on the trio loop itself, accounted (and, for a vGPU over its share,
    time-buffered) by the scheduler as memory-engine work (docs/scheduling.md, "Direct copies").
    Its schedule points come from pinning (residency.PIN_BURST)."""
    sched = handle.system.scheduler
    started = await sched.direct_begin(handle)
    try:
        fn(*args)
    finally:
        sched.direct_end(handle, started)
    _count(handle, path, size)


def _small_device_copy(handle: Handle, dst: int, src: int, size: int) -> None:
    handle.mmu.write(dst, handle.mmu.read(src, size))


async def _engine_copy(handle: Handle, path: str, size: int, fn: Any, *args: Any,
                       **kw: Any) -> None:
    """Run a blocking copy through the bounce buffers on a worker thread, between the
    scheduler's memory hooks."""
    sched = handle.system.scheduler
    async with handle.bounce_lock:
        await sched.memory_begin(handle)
        try:
            await trio.to_thread.run_sync(lambda: fn(*args, **kw))
        finally:
            sched.memory_end(handle)
    _count(handle, path, size)


async def _engine_job(handle: Handle, path: str, size: int, engine: Any, submit: Any,
                      *args: Any) -> None:
    """Submit an async job to a copy engine and sleep until its completion interrupt."""
    sched = handle.system.scheduler
    await sched.memory_begin(handle)
    try:
        seq = submit(*args)
        await handle.gpu.completions[engine.name].wait(seq)
    finally:
        sched.memory_end(handle)
    _count(handle, path, size)


def _bounce_args(handle: Handle, size: int, src_addr: int,
                 dst_addr: int) -> tuple[str, dict[str, Any]]:
    depth = handle.bounce.pipeline_count if size > handle.bounce.chunk_size else 1
    path = C.PATH_PIPELINED if depth > 1 else C.PATH_CHUNKED
    bounce = handle.bounce.placed_for(src_addr, dst_addr)
    return path, {"chunk": handle.bounce.chunk_size, "depth": depth, "bounce": bounce}


def _prepare(handle: Handle, buf: Any, size: int, *, writable: bool) -> HostRange:
    """The copy's host side, checked; the device range is checked where it is pinned
    (:func:`touching` looks it up: ENOENT / EFAULT), or up front by the _async forms."""
    check_handle(handle)
    check_size(size)
    return describe(handle.space.objects, buf, size, writable=writable)


async def gmemcpy_to_device(handle: Handle, dst: int, src: Any, size: int,
                            stream: int = LEGACY) -> None:
    """Copy ``size`` bytes from host buffer ``src`` to device address ``dst`` (synchronous,
    ordered in ``stream``).

    Errors: EBADF, EINVAL (size <= 0, bad or short buffer, unknown stream), ENOENT/EFAULT
    (bad address).
    """
    host = _prepare(handle, src, size, writable=False)
    await _sync_to_device(handle, dst, host, size, stream)


async def _sync_to_device(handle: Handle, dst: int, host: HostRange, size: int,
                          stream: int = LEGACY) -> None:
    handle.check_kernel_fault()
    async with handle.exclusive(stream):
        handle.check_kernel_fault()        # what ran before it in the stream may have faulted
        await _to_device(handle, dst, host, size)


async def _to_device(handle: Handle, dst: int, host: HostRange, size: int) -> None:
    check_handle(handle)
    async with touching(handle, (dst, size)):      # looks the range up (ENOENT / EFAULT)
        await _to_device_resident(handle, dst, host, size)


async def _to_device_resident(handle: Handle, dst: int, host: HostRange, size: int) -> None:
    if size <= handle.system.config.iowrite_limit:
        await _direct(handle, C.PATH_DIRECT, size, handle.mmu.write, dst, host.array)
    elif host.pinned is not None:
        engine = handle.phys.htod
        await _engine_job(handle, C.PATH_PINNED, size, engine, engine.submit_htod, handle.mmu,
                          dst, host.array)
    else:
        path, kw = _bounce_args(handle, size, host.array.ctypes.data, dst)
        await _engine_copy(handle, path, size, handle.phys.htod.htod, handle.mmu, dst,
                           host.array, **kw)


async def gmemcpy_from_device(handle: Handle, dst: Any, src: int, size: int,
                              stream: int = LEGACY) -> None:
    """Copy ``size`` bytes from device address ``src`` into host buffer ``dst`` (synchronous,
    ordered in ``stream``).

    Errors: EBADF, EINVAL (size <= 0, bad, short or read-only buffer, unknown stream),
    ENOENT/EFAULT.
    """
    host = _prepare(handle, dst, size, writable=True)
    await _sync_from_device(handle, host, src, size, stream)


async def _sync_from_device(handle: Handle, host: HostRange, src: int, size: int,
                            stream: int = LEGACY) -> None:
    handle.check_kernel_fault()
    async with handle.exclusive(stream):
        handle.check_kernel_fault()        # a kernel it waited for faulted: its results are not
        await _from_device(handle, host, src, size)


async def _from_device(handle: Handle, host: HostRange, src: int, size: int) -> None:
    check_handle(handle)
    obj = handle.lookup(src, size)
    # served from swap only from one readable mapping; else (gvm_map mappings end to end,
    # or one without access) it is brought back and read through the MMU, which checks
    whole = obj.covers(src, size) and bool(obj.prot)
    async with touching(handle, (src, size), bring=not whole) as blocks:
        off = obj.offset + src - obj.va
        if whole and blocks and not is_resident(blocks[0], off, size):
            await read_swapped(handle, blocks[0], off, host.array)
            _count(handle, C.PATH_SWAP, size)
        else:
            await _from_device_resident(handle, host, src, size)


async def _from_device_resident(handle: Handle, host: HostRange, src: int, size: int) -> None:
    if size <= handle.system.config.ioread_limit:
        await _direct(handle, C.PATH_DIRECT, size, handle.mmu.read_into, src, host.array)
    elif host.pinned is not None:
        engine = handle.phys.dtoh
        await _engine_job(handle, C.PATH_PINNED, size, engine, engine.submit_dtoh, handle.mmu,
                          host.array, src)
    else:
        path, kw = _bounce_args(handle, size, src, host.array.ctypes.data)
        await _engine_copy(handle, path, size, handle.phys.dtoh.dtoh, handle.mmu, host.array,
                           src, **kw)


def _async_eligible(host: HostRange, limit: int) -> bool:
    return host.size > limit and host.pinned is not None


async def gmemcpy_to_device_async(handle: Handle, dst: int, src: Any, size: int,
                                  stream: int = LEGACY) -> int:
    """Like :func:`gmemcpy_to_device`, in ``stream``; returns a fence id for ``gsync``.

    Asynchronous only when ``src`` lies in a pinned buffer (the caller keeps it unchanged
    until ``gsync``); otherwise the copy is done on return and the id is 0 (as in Gdev).
    EINVAL also for an unknown stream.
    """
    host = _prepare(handle, src, size, writable=False)
    handle.lookup(dst, size)
    handle.streams.get(stream)
    if not _async_eligible(host, handle.system.config.iowrite_limit):
        await _sync_to_device(handle, dst, host, size, stream)
        return 0

    async def op(fence: Fence) -> None:
        await _to_device(handle, dst, host, size)
    return handle.enqueue("memcpy", op, stream).id


async def gmemcpy_from_device_async(handle: Handle, dst: Any, src: int, size: int,
                                    stream: int = LEGACY) -> int:
    """Like :func:`gmemcpy_from_device`, in ``stream``; a fence id when ``dst`` is pinned,
    else 0."""
    host = _prepare(handle, dst, size, writable=True)
    handle.lookup(src, size)
    handle.streams.get(stream)
    if not _async_eligible(host, handle.system.config.ioread_limit):
        await _sync_from_device(handle, host, src, size, stream)
        return 0

    async def op(fence: Fence) -> None:
        await _from_device(handle, host, src, size)
    return handle.enqueue("memcpy", op, stream).id


def _prepare_dtod(handle: Handle, dst: int, src: int, size: int) -> None:
    check_handle(handle)
    check_size(size)
    handle.lookup(dst, size)
    handle.lookup(src, size)


async def _device_copy(handle: Handle, dst: int, src: int, size: int) -> None:
    _prepare_dtod(handle, dst, src, size)
    async with touching(handle, (dst, size), (src, size)):
        await _device_copy_resident(handle, dst, src, size)


async def _device_copy_resident(handle: Handle, dst: int, src: int, size: int) -> None:
    if size <= handle.system.config.ioread_limit:
        await _direct(handle, C.PATH_DEVICE, size, _small_device_copy, handle, dst, src, size)
        return
    engine = handle.phys.dtod
    await _engine_job(handle, C.PATH_DEVICE, size, engine, engine.submit_dtod, handle.mmu, dst,
                      handle.mmu, src, size)


async def gmemcpy(handle: Handle, dst: int, src: int, size: int,
                  stream: int = LEGACY) -> None:
    """Copy inside the context's unified address space (device or pinned, either side),
    synchronously, ordered in ``stream``.

    Errors: EBADF, EINVAL, ENOENT (either address unknown), EFAULT (range past an object).
    """
    _prepare_dtod(handle, dst, src, size)
    handle.check_kernel_fault()
    async with handle.exclusive(stream):
        handle.check_kernel_fault()
        await _device_copy(handle, dst, src, size)


async def gmemcpy_async(handle: Handle, dst: int, src: int, size: int,
                        stream: int = LEGACY) -> int:
    """Like :func:`gmemcpy`, but asynchronous, in ``stream``: a fence id for ``gsync``."""
    _prepare_dtod(handle, dst, src, size)

    async def op(fence: Fence) -> None:
        await _device_copy(handle, dst, src, size)
    return handle.enqueue("memcpy", op, stream).id
