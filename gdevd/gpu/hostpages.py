"""Host memory for DMA staging: anonymous, 2 MiB aligned, backed by huge pages where possible.

A bounce buffer is written by one core and read by another, chunk after chunk, at memory
speed.  On 4 KiB pages every 4 MiB chunk costs a thousand TLB misses on both sides, and
numpy's own huge-page advice only covers the 2 MiB-aligned part of an allocation (an 8 MiB
bounce buffer got 4-6 MiB of huge pages).  Measured with ``scripts/bench/memcpy.py``: the
pipelined 256 MiB copy took 1.42x a plain copy's time through such a buffer and 1.20x
through a fully huge-page-backed one.  The mapping is still committed only when touched
(``MADV_HUGEPAGE`` is advice: without transparent huge pages it is ordinary memory).

Memory shared with a client (:func:`sealed_memfd`) is sealed against shrinking and growing
before anyone else can see it: a client holding the fd cannot ``ftruncate`` it under the
daemon's mapping, which would turn the daemon's next copy from it into a SIGBUS.
"""

from __future__ import annotations

import errno
import fcntl
import mmap
import os

import numpy as np

from ..errors import GdevError

HUGE = 2 << 20
# Invariant: every memfd handed to a client carries all three; its size is fixed for life.
SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL


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


def sealed_memfd(name: str, size: int) -> int:
    """A new close-on-exec memfd of exactly ``size`` bytes, sealed with :data:`SEALS` (its
    size can never change, nor its seals).  The caller owns the fd.  ``GdevError(ENOMEM)``
    if it cannot be created or sized; the fd is never returned unsealed."""
    try:
        fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    except OSError as e:
        raise GdevError(errno.ENOMEM, f"memfd of {size} bytes: {e}") from e
    try:
        os.ftruncate(fd, size)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SEALS)
        if fcntl.fcntl(fd, fcntl.F_GET_SEALS) & SEALS != SEALS:
            raise OSError(errno.EPERM, "seals did not hold")
    except OSError as e:
        os.close(fd)
        raise GdevError(errno.ENOMEM, f"memfd of {size} bytes: {e}") from e
    return fd
