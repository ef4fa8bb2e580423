"""A physical GPU's device memory: one flat, lazily backed region.

The region is an anonymous ``mmap(MAP_NORESERVE)`` made in C, so a 1 GiB device costs no
resident memory until its pages are touched.  ``buffer`` is a zero-copy ``np.uint8`` view;
the mapping is released when the Vram is closed *and* the last view of it (including an
:class:`~gdevd.gpu.mmu.Mmu` aperture) is gone, so a stale view can never touch freed memory.
"""

from __future__ import annotations

import errno
from types import TracebackType

import numpy as np

from gdevd.errors import GdevError
from gdevd.gpu._core import ffi, lib
from gdevd.gpu._cutil import as_int, check

PAGE_SIZE = lib.GDEV_PAGE_SIZE


class Vram:
    """``size`` bytes of device memory (a positive multiple of PAGE_SIZE), zero-filled."""

    def __init__(self, size: int) -> None:
        size = as_int(size, "size", 1)
        if size % PAGE_SIZE:
            raise GdevError(errno.EINVAL, f"size {size} is not a multiple of {PAGE_SIZE}")
        out = ffi.new("void **")
        check(lib.gdev_vram_alloc(size, out), f"reserve {size} bytes of device memory")
        base = ffi.gc(out[0], lambda p: lib.gdev_vram_free(p, size))
        self._size = size
        self._buffer: np.ndarray | None = np.frombuffer(ffi.buffer(base, size), np.uint8)

    @property
    def size(self) -> int:
        """Bytes of device memory."""
        return self._size

    @property
    def buffer(self) -> np.ndarray:
        """A writable zero-copy ``np.uint8`` array over the region; EBADF once closed."""
        if self._buffer is None:
            raise GdevError(errno.EBADF, "device memory is closed")
        return self._buffer

    def close(self) -> None:
        """Drop this object's reference to the region (idempotent)."""
        self._buffer = None

    def __enter__(self) -> Vram:
        return self

    def __exit__(
        self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._buffer is None else "open"
        return f"<Vram {self._size} bytes, {state}>"
