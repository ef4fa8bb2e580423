"""The device runtime's memory: each host launch of a kernel that launches kernels (CUDA
dynamic parallelism, gdevd/gpu/ptx/devrt.py) gets an *arena* of parameter buffers in the
launching context's own device memory, one slot per pending device launch
(``handle.devrt_pending``: CUDA's ``cudaLimitDevRuntimePendingLaunchCount``, default
``D.DEVRT_PENDING``, set by gtune ``GDEV_TUNE_DEVRT_PENDING``) of the module's
largest parameter list.  It is charged to the context's vGPU share like any allocation
(ENOMEM beyond it, before the launch is queued), and freed when the launch retires, as a
cooperative launch's grid workspace is (coop.py); the context may touch or free it like its
own memory, which harms only its own launch."""

from __future__ import annotations

import errno
from typing import Any

from ..errors import GdevError
from ..gpu.ptx import devrt as DEVRT
from . import defaults as D
from .api_mem import gmalloc
from .handle import Handle
from .mm.memory import MemObject


def check_pending(value: Any) -> int:
    """``value`` if it is a pending-launch count the daemon takes (1..DEVRT_PENDING_MAX),
    else EINVAL."""
    if isinstance(value, bool) or not isinstance(value, int) or \
            not 0 < value <= D.DEVRT_PENDING_MAX:
        raise GdevError(errno.EINVAL, f"device-runtime pending launches must be "
                                      f"1..{D.DEVRT_PENDING_MAX}: {value!r}")
    return value


async def new_arena(handle: Handle, mod: Any, kernel: str) -> tuple[MemObject, tuple] | None:
    """The arena for a launch of ``kernel`` of the decoded module ``mod`` and the
    ``device_runtime`` argument of ``mod.launch`` (address, slot size, slots, the GPU's
    multiprocessor count and compute capability as device attributes), or None when
    the kernel does not call the device runtime (or is unknown: the engine's EINVAL)."""
    info = mod.kernels.get(kernel)
    if info is None or not info.launches:
        return None
    slot, count = mod.arena_slot(), handle.devrt_pending
    size = (slot * count + D.PAGE_SIZE - 1) // D.PAGE_SIZE * D.PAGE_SIZE
    va = await gmalloc(handle, size)
    major, minor = handle.phys.compute_capability
    attributes = {DEVRT.MP_COUNT: handle.phys.mp_count, DEVRT.CC_MAJOR: major,
                  DEVRT.CC_MINOR: minor}
    return handle.lookup(va), (va, slot, count, attributes)
