"""The device runtime's memory: each host launch of a kernel that launches kernels (CUDA
dynamic parallelism, gdevd/gpu/ptx/devrt.py) gets an *arena* of parameter buffers in the
launching context's own device memory, one slot per pending device launch
(``D.DEVRT_PENDING``, CUDA's ``cudaLimitDevRuntimePendingLaunchCount``) of the module's
largest parameter list.  It is charged to the context's vGPU share like any allocation
(ENOMEM beyond it, before the launch is queued), and freed when the launch retires, as a
cooperative launch's grid workspace is (coop.py); the context may touch or free it like its
own memory, which harms only its own launch."""

from __future__ import annotations

from typing import Any

from . import defaults as D
from .api_mem import gmalloc
from .handle import Handle
from .mm.memory import MemObject


async def new_arena(handle: Handle, mod: Any, kernel: str) -> tuple[MemObject,
                                                                   tuple[int, int, int]] | None:
    """The arena for a launch of ``kernel`` of the decoded module ``mod`` and the
    ``device_runtime`` argument of ``mod.launch`` (address, slot size, slots), or None when
    the kernel does not call the device runtime (or is unknown: the engine's EINVAL)."""
    info = mod.kernels.get(kernel)
    if info is None or not info.launches:
        return None
    slot, count = mod.arena_slot(), D.DEVRT_PENDING
    size = (slot * count + D.PAGE_SIZE - 1) // D.PAGE_SIZE * D.PAGE_SIZE
    va = await gmalloc(handle, size)
    return handle.lookup(va), (va, slot, count)
