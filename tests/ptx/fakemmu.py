"""A pure-numpy stand-in for gdevd.gpu.mmu.Mmu: one flat region mapped at ``base``."""

from __future__ import annotations

import numpy as np

from gdevd.errors import MmuFault
from gdevd.gpu.ptx.flatatomic import flat_atomic


class FakeMmu:
    """Same vector methods as the real MMU over ``size`` bytes at virtual ``base``."""

    def __init__(self, size: int, base: int = 1 << 32) -> None:
        self.mem = np.zeros(size, dtype=np.uint8)
        self.base = base

    def _offsets(self, vas: np.ndarray, width: int) -> np.ndarray:
        vas = np.asarray(vas, dtype=np.uint64)
        off = vas.astype(np.int64) - self.base
        bad = (vas < self.base) | (off + width > self.mem.size) | (vas % width != 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            reason = "misaligned" if int(vas[i]) % width else "unmapped"
            raise MmuFault(int(vas[i]), reason, index=i)
        return off

    def load_v(self, vas, width: int) -> np.ndarray:
        off = self._offsets(vas, width)
        return self.mem.view(f"u{width}")[off // width]

    def store_v(self, vas, values) -> None:
        values = np.asarray(values)
        w = values.dtype.itemsize
        off = self._offsets(vas, w)
        self.mem.view(values.dtype)[off // w] = values

    def atomic_v(self, vas, op, typ, a, b=None):
        from gdevd.gpu.ptx.flatatomic import ATOM_DTYPES
        w = ATOM_DTYPES[typ].itemsize
        off = self._offsets(vas, w)
        return flat_atomic(self.mem, off, op, typ, a, b)

    # helpers for tests
    def write(self, va: int, data) -> None:
        b = np.frombuffer(np.ascontiguousarray(data).tobytes(), np.uint8)
        self.mem[va - self.base: va - self.base + b.size] = b

    def read(self, va: int, n: int, dtype) -> np.ndarray:
        dt = np.dtype(dtype)
        return self.mem[va - self.base: va - self.base + n * dt.itemsize].view(dt).copy()
