"""Gdev verbs for contexts: gopen, gquery, gtune, gdevice_count (gclose: :mod:`.teardown`).

Every verb is ``async``, owned by the system's trio loop, takes the handle first (except
``gopen``/``gdevice_count``, which take the system) and raises :class:`GdevError` with an
errno on failure; nothing returns 0/None for failure.
"""

from __future__ import annotations

import errno
from collections.abc import Callable

import trio

from ..errors import GdevError
from . import constants as C
from . import defaults as D
from .config import check_chunk_size, check_pipeline_count
from .devrt import check_pending
from .handle import Handle, check_handle
from .limits import check_gopen
from .system import Credentials, GdevSystem


async def gopen(system: GdevSystem, minor: int, cred: Credentials | None = None) -> Handle:
    """Open a context on virtual GPU ``minor`` (Gdev's ``gopen``).

    Errors: ENODEV (no such vGPU or the system is shut down), EBUSY (the physical GPU already
    has ``contexts_max`` contexts, or a non-root opener is over its limits: :mod:`.limits`).
    """
    await trio.lowlevel.checkpoint()
    if system.nursery is None or not system.physical:
        raise GdevError(errno.ENODEV, "the system is not running")
    vgpu = system.vgpu(minor)
    cred = cred or Credentials.current()
    check_gopen(system, vgpu, cred)
    handle = Handle(system, vgpu, cred)
    system.handles[handle.cid] = handle
    vgpu.handles.add(handle)
    system.scheduler.entity(handle)    # the guest class is the opener's policy at the open
    return handle


_QUERIES: dict[int, Callable[[Handle], int]] = {
    C.GDEV_QUERY_DEVICE_MEM_SIZE: lambda h: h.vgpu.memory_size,
    C.GDEV_QUERY_DMA_MEM_SIZE: lambda h: h.vgpu.dma_memory_size,
    C.GDEV_QUERY_CHIPSET: lambda h: D.CHIPSET,
    C.GDEV_QUERY_BUS_TYPE: lambda h: D.BUS_TYPE,
    C.GDEV_QUERY_AGP_SIZE: lambda h: D.AGP_SIZE,
    C.GDEV_QUERY_PCI_VENDOR: lambda h: D.PCI_VENDOR,
    C.GDEV_QUERY_PCI_DEVICE: lambda h: D.PCI_DEVICE,
    C.GDEV_NVIDIA_QUERY_MP_COUNT: lambda h: h.phys.mp_count,
    C.GDEV_QUERY_DEVICE_MEM_FREE: lambda h: max(0, h.vgpu.memory_size - h.vgpu.memory_used),
    C.GDEV_QUERY_DEVICE_MEM_USED: lambda h: h.vgpu.memory_used,
    C.GDEV_QUERY_COMPUTE_CAPABILITY:
        lambda h: (h.phys.compute_capability[0] << 16) | h.phys.compute_capability[1],
    C.GDEV_QUERY_DMA_MEM_FREE: lambda h: max(0, h.vgpu.dma_memory_size - h.vgpu.dma_used),
}
assert set(_QUERIES) == C.QUERY_TYPES


async def gquery(handle: Handle, qtype: int) -> int:
    """Gdev's ``gquery``: the value of query ``qtype`` (``GDEV_QUERY_*`` in constants).

    Errors: EBADF (closed handle), EINVAL (unknown type).
    """
    await trio.lowlevel.checkpoint()
    return query(handle, qtype)


def query(handle: Handle, qtype: int) -> int:
    """:func:`gquery` without its checkpoint, for a caller that checkpoints on its own (the
    ioctl server's loop): reads state, never blocks.  Same value and errors."""
    check_handle(handle)
    query = _QUERIES.get(qtype) if type(qtype) is int else None
    if query is None:
        raise GdevError(errno.EINVAL, f"unknown query type {qtype!r}")
    return int(query(handle))


async def gtune(handle: Handle, ttype: int, value: int) -> None:
    """Gdev's ``gtune``: set the handle's memcpy chunk size or pipeline count, or (gdev-py)
    its device runtime's pending-launch count.

    ``GDEV_TUNE_MEMCPY_CHUNK_SIZE``: 4 KiB..32 MiB, a page multiple.
    ``GDEV_TUNE_MEMCPY_PIPELINE_COUNT``: 1..4.  The bounce buffers are reallocated once
    earlier copies are done.  ``GDEV_TUNE_DEVRT_PENDING``: 1..DEVRT_PENDING_MAX parameter
    buffers for each later launch of a kernel that launches kernels (devrt.py).  Errors:
    EBADF, EINVAL (unknown type or out-of-range value; nothing changes then).
    """
    check_handle(handle)
    if ttype == C.GDEV_TUNE_DEVRT_PENDING:
        await trio.lowlevel.checkpoint()
        handle.devrt_pending = check_pending(value)
        return
    chunk, depth = handle.bounce.chunk_size, handle.bounce.pipeline_count
    if ttype == C.GDEV_TUNE_MEMCPY_CHUNK_SIZE:
        check_chunk_size(value)
        chunk = value
    elif ttype == C.GDEV_TUNE_MEMCPY_PIPELINE_COUNT:
        check_pipeline_count(value)
        depth = value
    else:
        raise GdevError(errno.EINVAL, f"unknown tune type {ttype!r}")
    async with handle.exclusive():
        handle.check_open()
        handle.bounce.set(chunk, depth)


async def gdevice_count(system: GdevSystem) -> int:
    """Gdev's ``gdevice_count``: the number of virtual GPUs (``/dev/gdevN`` files)."""
    await trio.lowlevel.checkpoint()
    return len(system.virtual)
