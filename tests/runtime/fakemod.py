"""A test double of a decoded module, to exercise the launch plumbing without PTX.

It is NOT an executor: it exists so the runtime's part of a launch (code fetched from the
context's memory, decode cache, compute-engine thread, slices, completion interrupt, fences,
fault isolation, cancellation) is tested on its own.  Kernels that really run PTX are
tested in test_launch_ptx.py.  Its "code" is the text ``FAKE <tag>``; entries:

- ``fill``: params = (u64 addr, u32 value, u32 count): stores ``count`` u32 ``value`` at
  ``addr`` through the context's MMU, ``budget`` elements per slice; an MMU fault becomes a
  KernelFault(EFAULT), as the executor reports it.
- ``spin``: params = (u32 slices, u32 ms): runs ``slices`` slices of ``ms`` each.
"""

from __future__ import annotations

import errno
import struct
import time
from types import SimpleNamespace
from typing import Any

import numpy as np

from gdevd.errors import GdevError, KernelFault, MmuFault


class FakeModule:
    def __init__(self, text: str) -> None:
        if not text.startswith("FAKE"):
            raise GdevError(errno.EINVAL, "not a fake module")
        self.text = text
        self.launches: list[tuple[Any, ...]] = []
        self.kernels: dict[str, Any] = {}    # no decoded kernels: none calls malloc

    def data_layout(self) -> Any:
        return SimpleNamespace(size=0, image=b"")

    def launch(self, name: str, *, grid: Any, block: Any, params: bytes, mmu: Any,
               data_base: int, shared_dynamic: int = 0, watchdog: float | None = None,
               textures: Any = None) -> Any:
        self.launches.append((name, grid, block, params))
        if name == "fill":
            addr, value, count = struct.unpack("<QII", params)
            return _Fill(mmu, addr, value, count)
        if name == "spin":
            return _Spin(*struct.unpack("<II", params))
        raise GdevError(errno.EINVAL, f"no entry {name!r}")


class _Fill:
    def __init__(self, mmu: Any, addr: int, value: int, count: int) -> None:
        self.mmu, self.addr, self.value, self.count, self.done = mmu, addr, value, count, 0
        self.slices = 0

    def run(self, budget: int | None = None) -> bool:
        self.slices += 1
        n = min(budget or self.count, self.count - self.done)
        vas = self.addr + 4 * np.arange(self.done, self.done + n, dtype=np.uint64)
        try:
            self.mmu.store_v(vas, np.full(n, self.value, np.uint32))
        except MmuFault as e:
            raise KernelFault(errno.EFAULT, f"illegal address in fill: {e}") from None
        self.done += n
        return self.done == self.count


class _Spin:
    def __init__(self, slices: int, ms: int) -> None:
        self.left, self.ms = slices, ms

    def run(self, budget: int | None = None) -> bool:
        time.sleep(self.ms / 1000)
        self.left -= 1
        return self.left <= 0


def loader(calls: list[str]) -> Any:
    """A module loader recording the texts it decoded."""
    def load(text: str) -> FakeModule:
        calls.append(text)
        return FakeModule(text)
    return load
