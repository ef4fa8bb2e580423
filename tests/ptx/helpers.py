"""Test helpers: a tiny device (MMU + bump allocator) and kernel launching with packed args."""

from __future__ import annotations

import pathlib
import struct

import numpy as np

from gdevd.gpu.mmu import Mmu
from gdevd.gpu.ptx import load_module
from gdevd.gpu.vram import Vram

DATA = pathlib.Path(__file__).parent / "data"


def load(name: str):
    """Load tests/ptx/data/<name>.ptx."""
    return load_module((DATA / f"{name}.ptx").read_text(), name)


class Device:
    """Device memory for tests: ``alloc``/``put``/``get`` and ``launch`` with Python args."""

    BASE = 1 << 32

    def __init__(self, size: int = 64 << 20) -> None:
        self.vram = Vram(size)
        self.mmu = Mmu()
        self.mmu.set_aperture(0, self.vram.buffer)
        self.mmu.map(self.BASE, 0, size)
        self.size = size
        self.top = self.BASE

    def alloc(self, nbytes: int, align: int = 256) -> int:
        va = (self.top + align - 1) // align * align
        self.top = va + max(nbytes, 1)
        assert self.top <= self.BASE + self.size
        return va

    def put(self, arr) -> int:
        arr = np.ascontiguousarray(arr)
        va = self.alloc(arr.nbytes)
        if arr.nbytes:
            self.mmu.write(va, arr.tobytes())
        return va

    def get(self, va: int, n: int, dtype) -> np.ndarray:
        dt = np.dtype(dtype)
        return np.frombuffer(self.mmu.read(va, n * dt.itemsize), dt).copy()

    def load_data(self, mod) -> int:
        lay = mod.data_layout()
        base = self.alloc(lay.size or 1)
        if lay.size:
            self.mmu.write(base, lay.image)
        return base

    def launch(self, mod, kernel: str, grid, block, *args, shared: int = 0,
               budget_steps: int | None = None, watchdog=None, data_base=None, textures=None,
               grid_workspace: int = 0, heap=None, device_runtime=None):
        """Pack ``args`` by the kernel's parameter layout and run the launch to completion.

        A Python int is packed by parameter size (4 or 8 bytes), a float as f32/f64 by size,
        an ``(value, fmt)`` tuple with struct ``fmt``.
        """
        launch = self.prepare(mod, kernel, grid, block, *args, shared=shared,
                              watchdog=watchdog, data_base=data_base, textures=textures,
                              grid_workspace=grid_workspace, heap=heap,
                              device_runtime=device_runtime)
        if budget_steps is None:
            assert launch.run() is True
        else:
            while not launch.run(budget_steps):
                pass
        return launch

    def prepare(self, mod, kernel, grid, block, *args, shared=0, watchdog=None,
                data_base=None, textures=None, grid_workspace=0, heap=None, device_runtime=None):
        info = mod.kernels[kernel]
        assert len(args) == len(info.params)
        buf = bytearray(info.param_size)
        for p, a in zip(info.params, args, strict=False):
            if isinstance(a, tuple):
                raw = struct.pack("<" + a[1], a[0])
            elif isinstance(a, float):
                raw = struct.pack("<f" if p.size == 4 else "<d", a)
            else:
                raw = int(a).to_bytes(p.size, "little", signed=a < 0)
            buf[p.offset:p.offset + p.size] = raw
        if data_base is None:
            data_base = self.load_data(mod)
        return mod.launch(kernel, grid, block, bytes(buf), self.mmu, data_base,
                          shared_dynamic=shared, watchdog=watchdog, textures=textures,
                          grid_workspace=grid_workspace, heap=heap,
                          device_runtime=device_runtime)
