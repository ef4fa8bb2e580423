"""Host memory on the client side: pinned (DMA) buffers, staging buffers, buffer lookup.

Both kinds are shared memory the daemon created (a memfd passed over the socket) and that
the client maps once.  A copy whose host side lies inside a pinned buffer travels as
``(buf_id, offset)`` (Gdev's PINCPY); any other host memory is *pageable* and streams through
the session's staging buffer.
"""

from __future__ import annotations

import errno as _errno
import mmap
import os
from typing import Any

import numpy as np

from libgdev.buffers import BufferProblem, byte_view
from libgdev.errors import error_from_errno


def host_view(buf: Any, writable: bool) -> memoryview:
    """A flat byte view of ``buf`` (bytes-like, numpy array or DmaBuffer; C-contiguous)."""
    if isinstance(buf, DmaBuffer):
        buf = buf.array
    try:
        return byte_view(buf, writable=writable)
    except BufferProblem as e:
        raise error_from_errno(_errno.EINVAL, str(e)) from None


def address_of(view: memoryview) -> int:
    """The address of a byte view's first byte (0 for an empty view)."""
    if not len(view):
        return 0
    return int(np.frombuffer(view, dtype=np.uint8).ctypes.data)


class SharedMapping:
    """A memfd the daemon passed, mapped read-write; ``array`` is an np.uint8 view."""

    def __init__(self, fd: int, size: int) -> None:
        try:
            self._mmap = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(fd)
        self.size = size
        self.array = np.frombuffer(self._mmap, dtype=np.uint8)
        self.base = int(self.array.ctypes.data)

    def contains(self, addr: int, size: int) -> bool:
        """Whether [addr, addr+size) lies inside this mapping."""
        return self.base <= addr and addr + size <= self.base + self.size

    def close(self) -> None:
        """Unmap (fails with BufferError while numpy views of it are alive elsewhere)."""
        self.array = np.empty(0, dtype=np.uint8)
        try:
            self._mmap.close()
        except BufferError:
            pass  # a caller still holds a view; the mapping goes with the last view


class DmaBuffer:
    """A pinned host buffer from ``gmalloc_dma``: ``array`` (np.uint8, zero-copy shared with
    the daemon), ``addr`` its GPU virtual address, ``size``, ``buf_id`` for the ABI."""

    def __init__(self, buf_id: int, addr: int, size: int, fd: int) -> None:
        self.buf_id = buf_id
        self.addr = addr
        self.size = size
        self._map = SharedMapping(fd, size)
        self.array = self._map.array
        self.base = self._map.base

    def __len__(self) -> int:
        return self.size

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self.array if dtype is None else self.array.astype(dtype, copy=False)

    def release(self) -> None:
        """Unmap on the client side (after GFREE_DMA)."""
        self.array = np.empty(0, dtype=np.uint8)
        self._map.close()


class Staging:
    """The session's staging buffer: ``slots`` chunks of ``chunk`` bytes each."""

    def __init__(self, fd: int, size: int, slots: int) -> None:
        self._map = SharedMapping(fd, size)
        self.slots = slots
        self.chunk = size // slots

    def slot(self, i: int) -> np.ndarray:
        """The bytes of slot ``i``."""
        return self._map.array[i * self.chunk:(i + 1) * self.chunk]

    def close(self) -> None:
        """Unmap."""
        self._map.close()
