"""A context's device heap: the memory of ``malloc``/``free`` (and ``new``/``delete``) in its
kernels, and CUDA's ``CU_LIMIT_MALLOC_HEAP_SIZE``.

* The heap is ``handle.heap_limit`` bytes (8 MiB unless the context set another size first:
  :func:`glimit`) of the context's own device memory, reserved with ``gmalloc`` when the
  first kernel that calls malloc or free launches: charged to the vGPU's share like any
  allocation (that launch fails with ENOMEM beyond it), swapped like any block, freed with
  the context, and mapped in that context's address space only, so no other tenant's
  kernel can reach it.  The context cannot ``gfree`` it (EINVAL).
* The allocator (gdevd/gpu/heap.py) keeps its metadata in the daemon, so whatever a kernel
  writes into the heap, malloc and free stay correct for it and harmless for the daemon.
* Once the heap exists its size is fixed: setting the limit then fails with EINVAL, as
  ``cuCtxSetLimit`` does after a kernel using malloc launched.  A size beyond the vGPU's
  memory share is refused at once (ENOMEM); sizes are rounded up to whole pages.
"""

from __future__ import annotations

import errno

import trio

from ..errors import GdevError
from ..gpu.heap import HeapAllocator
from . import constants as C
from . import defaults as D
from .api_mem import gmalloc
from .handle import Handle, check_handle


async def launch_heap(handle: Handle, info) -> HeapAllocator | None:
    """The heap a launch of decoded kernel ``info`` runs with: None unless the kernel calls
    malloc or free; the context's heap, reserved now if this is the first such launch.
    Errors: ENOMEM (the heap does not fit the vGPU's share or the device)."""
    if info is None or not info.heap:
        return None
    async with handle.heap_lock:        # two streams' first launches reserve it once
        if handle.heap is None:
            va = await gmalloc(handle, handle.heap_limit)
            handle.heap = HeapAllocator(va, handle.heap_limit)
    return handle.heap


async def glimit(handle: Handle, limit: int, value: int | None = None) -> int:
    """Set context limit ``limit`` (``GDEV_LIMIT_*``) to ``value``, or only read it (None);
    the value in effect.

    ``GDEV_LIMIT_MALLOC_HEAP_SIZE``: the device heap's size in bytes, rounded up to whole
    pages.  Errors: EBADF; EINVAL (unknown limit, a value not a positive integer, or the
    heap already in use: a kernel calling malloc or free has launched); ENOMEM (more than
    the vGPU's memory share).
    """
    await trio.lowlevel.checkpoint()
    check_handle(handle)
    if limit != C.GDEV_LIMIT_MALLOC_HEAP_SIZE:
        raise GdevError(errno.EINVAL, f"unknown context limit {limit!r}")
    if value is None:
        return handle.heap_limit
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise GdevError(errno.EINVAL, f"heap size must be a positive integer: {value!r}")
    size = -(-value // D.PAGE_SIZE) * D.PAGE_SIZE
    if size > handle.vgpu.memory_size:
        raise GdevError(errno.ENOMEM, f"a device heap of {value} bytes exceeds the vGPU's "
                                      f"memory share of {handle.vgpu.memory_size} bytes")
    async with handle.heap_lock:
        if handle.heap is not None:
            raise GdevError(errno.EINVAL, "the device heap is in use: its size is fixed once "
                                          "a kernel calling malloc or free has launched")
        handle.heap_limit = size
    return size
