"""Cooperative launches: CUDA's limit on their size and their grid workspaces.

A cooperative launch (``GdevKernel.cooperative``, ``cuLaunchCooperativeKernel``) must have
every block of its grid resident at once; the engines provide that (gdevd/gpu/ptx/coop.py),
and this module holds the policy around it:

* the largest grid is CUDA's: the kernel's occupancy per multiprocessor
  (``libgdev.kernel.coresident_blocks_per_mp``, what ``cuOccupancyMaxActiveBlocksPerMultiprocessor``
  reports) times the GPU's multiprocessors; a larger one is refused at launch with EOVERFLOW,
  which the CUDA layers report as ``CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE``;
* each launch gets a *grid workspace*: one page of the launching context's device memory,
  charged to its vGPU's share like any allocation (ENOMEM beyond it), zeroed but for its
  ``wsSize`` word (cooperative_groups' ``grid_workspace``), whose address the kernel reads
  from ``%envreg1/2``; it is freed when the launch retires (the context's teardown frees
  it if the context closes first).  The context may touch or ``gfree`` it like its own
  memory (a ``gfree`` waits for the launch, as for any buffer): that harms only itself.
"""

from __future__ import annotations

import errno
from typing import Any

from libgdev.kernel import GdevKernel, coresident_blocks_per_mp

from ..errors import GdevError
from . import defaults as D
from .api_mem import gmalloc
from .handle import Handle
from .mm.memory import MemObject
from .teardown import settle_object, unmap_object

WS_SIZE = D.PAGE_SIZE
_WS_HEADER = (8).to_bytes(4, "little")      # grid_workspace.wsSize: the struct's 8 bytes


def check_coresident(handle: Handle, info: Any, kernel: GdevKernel) -> None:
    """EOVERFLOW unless ``kernel``'s grid fits at once on ``handle``'s GPU (see above);
    ``info`` is the decoded kernel (its static shared memory and thread limit)."""
    bx, by, bz = kernel.block
    gx, gy, gz = kernel.grid
    per_mp = coresident_blocks_per_mp(bx * by * bz, info.static_shared + kernel.shared_dynamic,
                                      info.max_threads or 1024)
    most = per_mp * handle.phys.mp_count
    if gx * gy * gz > most:
        raise GdevError(errno.EOVERFLOW, f"cooperative launch of {gx * gy * gz} blocks of "
                        f"{kernel.name}: at most {most} can be resident at once ({per_mp} per "
                        f"multiprocessor x {handle.phys.mp_count})")


async def new_workspace(handle: Handle) -> MemObject:
    """A fresh grid workspace in ``handle``'s address space (see above)."""
    va = await gmalloc(handle, WS_SIZE)
    obj = handle.lookup(va)
    handle.mmu.write(va, _WS_HEADER + bytes(WS_SIZE - len(_WS_HEADER)))  # resident: new
    return obj


async def free_workspace(handle: Handle, obj: MemObject) -> None:
    """Give the workspace back, unless the context already did (gfree) or closed."""
    if _mine(handle, obj):
        await settle_object(handle, obj)
        if _mine(handle, obj):
            unmap_object(handle, obj)


def _mine(handle: Handle, obj: MemObject) -> bool:
    """Whether ``obj`` is still mapped in the open ``handle``."""
    if handle.closed:
        return False
    try:
        return handle.lookup(obj.va) is obj
    except GdevError:
        return False
