"""The launch descriptor, Gdev's ``struct gdev_kernel`` (protocol surface).

One class for both sides: the client fills it and :meth:`libgdev.Handle.glaunch` sends its
fields; the daemon's ioctl backend rebuilds it from a GLAUNCH request; the runtime's
``glaunch`` validates it (``gdevd.runtime.api_exec``).  It carries data only, no checks: every
field is untrusted until the runtime has looked at it.
"""

from __future__ import annotations

import dataclasses

Dim3 = tuple[int, int, int]


@dataclasses.dataclass
class GdevKernel:
    """A launch descriptor, reduced to what PTX needs.

    ``code_addr``/``code_size``: the PTX module's text in device memory (uploaded by the
    caller with ``gmalloc`` + ``gmemcpy_to_device``); ``name``: the entry; ``grid``/``block``:
    (x, y, z); ``params``: the parameter buffer, laid out as the kernel's ``.param`` list;
    ``data_addr``: the module's data segment as laid out by ``mod.data_layout()`` (0 if the
    module has none); ``shared_dynamic``: bytes of dynamic shared memory; ``cooperative``:
    every block resident at once, with a grid workspace for ``this_grid().sync()``
    (``cuLaunchCooperativeKernel``; at most :func:`coresident_blocks_per_mp` blocks per
    multiprocessor).
    """

    code_addr: int
    code_size: int
    name: str
    grid: Dim3 = (1, 1, 1)
    block: Dim3 = (1, 1, 1)
    params: bytes | bytearray | memoryview = b""
    data_addr: int = 0
    shared_dynamic: int = 0
    cooperative: bool = False


# The emulated multiprocessor's resources, as its device attributes report them
MP_THREADS = 1024           # MAX_THREADS_PER_MULTIPROCESSOR
MP_SHARED = 64 * 1024       # MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
MP_BLOCKS = 16              # resident blocks per multiprocessor (sm_75)


def coresident_blocks_per_mp(block_threads: int, shared_bytes: int, max_threads: int) -> int:
    """Blocks of ``block_threads`` threads using ``shared_bytes`` of shared memory (static
    and dynamic) that one multiprocessor holds at once: CUDA's occupancy
    (``cuOccupancyMaxActiveBlocksPerMultiprocessor``), 0 for a block larger than the
    kernel's ``max_threads``.  Times the multiprocessor count, the largest cooperative grid.
    (The C libraries compute the same: libgdev/csrc/cuda/launch.c.)"""
    if block_threads <= 0 or block_threads > max_threads:
        return 0
    warps = -(-block_threads // 32)
    by_threads = MP_THREADS // (warps * 32)
    by_shared = MP_SHARED // shared_bytes if shared_bytes else MP_BLOCKS
    return min(by_threads, by_shared, MP_BLOCKS)
