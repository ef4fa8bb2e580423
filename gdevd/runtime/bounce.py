"""A context's bounce buffers: the host slots pageable copies go through (Gdev's chunks).

``pipeline_count`` slots of ``chunk_size`` bytes, allocated as huge pages and touched
lazily; ``gtune`` resizes them (:meth:`BounceBuffers.set`) while the context's stream is
held, so no copy uses them meanwhile.  Closing the context sets them to nothing.
"""

from __future__ import annotations

import numpy as np

from ..gpu.hostpages import huge_buffer
from . import defaults as D


class BounceBuffers:
    """``pipeline_count`` bounce slots of ``chunk_size`` bytes (``slots``: all of them)."""

    def __init__(self, chunk: int, depth: int) -> None:
        self.chunk_size = self.pipeline_count = 0
        self._raw = self.slots = np.empty(0, dtype=np.uint8)
        self._base = 0
        self.set(chunk, depth)

    def set(self, chunk: int, depth: int) -> None:
        """(Re)allocate ``depth`` slots of ``chunk`` bytes (0, 0: none)."""
        raw = huge_buffer(chunk * depth + 2 * D.PAGE_SIZE if chunk else 0)
        self._raw, self._base = raw, -raw.ctypes.data % D.PAGE_SIZE
        self.chunk_size, self.pipeline_count = chunk, depth
        self.slots = self.at(0)

    def at(self, offset: int) -> np.ndarray:
        """The slots starting ``offset`` (0..4095) bytes into a page."""
        start = self._base + offset
        return self._raw[start:start + self.chunk_size * self.pipeline_count]

    def placed_for(self, src_addr: int, dst_addr: int) -> np.ndarray:
        """The slots placed for a two-stage copy from ``src_addr`` to ``dst_addr``.

        memcpy on some CPUs (measured: AMD EPYC, glibc) runs 3-4x slower when the
        destination sits a few bytes past the source modulo the page size, which is
        exactly where a large numpy array (16 bytes into a page) lands against a
        page-aligned one.  The slots are placed so that both stages have a relative page
        offset in [2048, 4096), where copies run at full speed.
        """
        gap = (dst_addr - src_addr) % D.PAGE_SIZE
        return self.at((src_addr + (gap + D.PAGE_SIZE) // 2) % D.PAGE_SIZE)
