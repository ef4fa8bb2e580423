"""One emulated physical GPU: its identity, device memory, copy engines and compute engine.

Mechanism only: who may use which page, and when, is the runtime's business.  Device memory
is the C core's :class:`~gdevd.gpu.vram.Vram` (reserved, not committed: a 1 GiB device
costs no RSS until pages are written).  :meth:`PhysicalGpu.scrub` zeroes freed pages so no
context ever reads another's data: small ranges by a memset (they stay resident, so reusing
them costs no page faults), ranges of 2 MiB or more with ``madvise(MADV_DONTNEED)`` where
the kernel allows it (a private anonymous mapping), which also gives their RSS back.
"""

from __future__ import annotations

import ctypes
import errno
import logging

import numpy as np

from ..errors import GdevError
from .compute import ComputeEngine, ModuleCache
from .copyengine import CopyEngine
from .vram import Vram

log = logging.getLogger(__name__)

_MADV_DONTNEED = 4
_PAGE = 4096
_DISCARD_MIN = 2 << 20    # smaller frees are zero-filled and stay resident (cheap to reuse)
_libc = ctypes.CDLL(None, use_errno=True)
_libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_libc.madvise.restype = ctypes.c_int


class PhysicalGpu:
    """One physical GPU of compute capability ``cc``, with ``memory`` bytes of device memory.

    Attributes: ``index``, ``name``, ``compute_capability`` (major, minor), ``mp_count``,
    ``memory_size``, ``dma_memory_size``, ``vram``, ``mem`` (np.uint8 view of the VRAM),
    copy engines ``htod``/``dtoh``/``dtod``, ``compute`` (the engine thread) and
    ``modules`` (the decode cache).  ``close()`` stops the engines and releases the VRAM.
    """

    def __init__(self, index: int, *, name: str, memory: int, dma_memory: int,
                 mp_count: int, compute_capability: tuple[int, int], compute_slice: int,
                 decode_cache: int) -> None:
        self.index = index
        self.name = name
        self.memory_size = memory
        self.dma_memory_size = dma_memory
        self.mp_count = mp_count
        self.compute_capability = compute_capability
        self.vram = Vram(memory)
        self.mem = np.asarray(self.vram.buffer, dtype=np.uint8).reshape(-1)
        self._can_discard = self._probe_discard()
        self.htod = CopyEngine(f"gpu{index}-htod")
        self.dtoh = CopyEngine(f"gpu{index}-dtoh")
        self.dtod = CopyEngine(f"gpu{index}-dtod")
        self.compute = ComputeEngine(f"gpu{index}-compute", compute_slice)
        self.modules = ModuleCache(decode_cache)
        self._closed = False

    def _probe_discard(self) -> bool:
        """True if madvise(DONTNEED) on the VRAM reads back as zeros (private mapping)."""
        self.mem[0] = 0xA5
        ok = self._madvise(0, _PAGE) and self.mem[0] == 0
        self.mem[0] = 0
        log.debug("gpu%d: VRAM scrub by %s", self.index, "madvise" if ok else "memset")
        return ok

    def _madvise(self, pa: int, size: int, advice: int = _MADV_DONTNEED) -> bool:
        addr = self.mem.ctypes.data + pa
        return _libc.madvise(ctypes.c_void_p(addr), ctypes.c_size_t(size), advice) == 0

    def scrub(self, pa: int, size: int) -> None:
        """Zero device memory ``[pa, pa + size)`` (page aligned) and release its RSS if possible."""
        if pa % _PAGE or size % _PAGE or pa < 0 or pa + size > self.memory_size:
            raise GdevError(errno.EINVAL, f"scrub range not page aligned or outside VRAM: "
                                          f"{pa:#x}+{size:#x}")
        if size < _DISCARD_MIN or not (self._can_discard and self._madvise(pa, size)):
            self.mem[pa:pa + size] = 0

    def close(self) -> None:
        """Stop the engines (finishing queued work) and release the device memory."""
        if self._closed:
            return
        self._closed = True
        self.compute.close()
        for engine in (self.htod, self.dtoh, self.dtod):
            engine.close()
        del self.mem
        self.vram.close()

    def __repr__(self) -> str:
        cc = ".".join(map(str, self.compute_capability))
        return (f"<PhysicalGpu {self.index} {self.name!r} cc {cc}, {self.mp_count} MPs, "
                f"{self.memory_size >> 20} MiB>")
