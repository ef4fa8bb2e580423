"""Host memory for DMA staging: anonymous, 2 MiB aligned, backed by huge pages where possible.

A bounce buffer is written by one core and read by another, chunk after chunk, at memory
speed.  On 4 KiB pages every 4 MiB chunk costs a thousand TLB misses on both sides, and
numpy's own huge-page advice only covers the 2 MiB-aligned part of an allocation (an 8 MiB
bounce buffer got 4-6 MiB of huge pages).  Measured with ``scripts/bench/memcpy.py``: the
pipelined 256 MiB copy took 1.42x a plain copy's time through such a buffer and 1.20x
through a fully huge-page-backed one.  The mapping is still committed only when touched
(``MADV_HUGEPAGE`` is advice: without transparent huge pages it is ordinary memory).
"""

from __future__ import annotations

import errno
import mmap

import numpy as np

from ..errors import GdevError

HUGE = 2 << 20


def huge_buffer(size: int) -> np.ndarray:
    """A zero-filled, writable ``np.uint8`` array of ``size`` bytes (>= 0) starting on a
    2 MiB boundary, advised to use huge pages.  The mapping lives as long as the array (or
    any view of it).  ``GdevError(ENOMEM)`` if it cannot be mapped."""
    if size < 0:
        raise GdevError(errno.EINVAL, f"negative buffer size {size}")
    if size == 0:
        return np.empty(0, dtype=np.uint8)
    try:
        region = mmap.mmap(-1, size + HUGE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    except OSError as e:
        raise GdevError(errno.ENOMEM, f"host buffer of {size} bytes: {e}") from e
    whole = np.frombuffer(region, dtype=np.uint8)
    start = -whole.ctypes.data % HUGE
    try:
        region.madvise(mmap.MADV_HUGEPAGE, start, size)
    except (OSError, AttributeError, ValueError):
        pass  # advice only: no transparent huge pages here
    return whole[start:start + size]
