"""Run the repository's kernels on a backend: allocate, upload, pack parameters, launch, read.

Two backends share one small interface (``alloc``, ``upload``, ``download``, ``launch``):

- ``CpuDevice`` runs the CUDA C of ``kernels/<file>.cu`` compiled for the host against
  ``cpu_cuda/cuda_shim.h`` (fibers per CUDA thread): an oracle independent of the PTX engine,
  so a disagreement between engine and reference can be pinned on one of them.
- ``EngineDevice`` runs the committed ``kernels/<file>.ptx`` on the emulated GPU
  (``gdevd.gpu.ptx.load_module``) with buffers in one address space over a ``Vram``.

Kernel arguments are given in declaration order: ints for pointers and integers, ``float``
(or numpy float32/float64) for floating-point parameters, ``bytes`` for by-value structs.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "kernels"
PAGE = 4096


def pack_params(args, layout) -> bytes:
    """Pack ``args`` into a parameter buffer; ``layout`` is [(offset, size)] per parameter.

    Integers are little-endian two's complement of the parameter's size; Python floats and
    numpy floats become f32 or f64 by size; bytes are copied as they are (size must match).
    """
    if len(args) != len(layout):
        raise TypeError(f"kernel takes {len(layout)} arguments, got {len(args)}")
    end = max((off + size for off, size in layout), default=0)
    buf = bytearray(end)
    for arg, (off, size) in zip(args, layout, strict=True):
        buf[off:off + size] = _encode(arg, size)
    return bytes(buf)


def _encode(arg, size: int) -> bytes:
    if isinstance(arg, bytes | bytearray):
        if len(arg) != size:
            raise ValueError(f"struct argument of {len(arg)} bytes for a {size}-byte parameter")
        return bytes(arg)
    if isinstance(arg, float | np.floating):
        return struct.pack({4: "<f", 8: "<d"}[size], float(arg))
    value = int(arg)
    return (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little")


class _Device:
    """The shared half of a backend: typed uploads and downloads over alloc/write/read."""

    def upload(self, array) -> int:
        """Copy ``array`` (C order) into a fresh device buffer; return its address."""
        data = np.ascontiguousarray(array)
        ptr = self.alloc(max(data.nbytes, 1))
        self.write(ptr, data.tobytes())
        return ptr

    def zeros(self, nbytes: int) -> int:
        """Return the address of a fresh zero-filled buffer of ``nbytes``."""
        ptr = self.alloc(max(nbytes, 1))
        self.write(ptr, bytes(nbytes))
        return ptr

    def download(self, ptr: int, dtype, shape) -> np.ndarray:
        """Read a ``shape`` array of ``dtype`` from device address ``ptr``."""
        dtype = np.dtype(dtype)
        count = int(np.prod(shape))
        raw = self.read(ptr, count * dtype.itemsize)
        return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


class CpuDevice(_Device):
    """Kernels' CUDA C run on the host through the fiber shim (see cpu_backend.py)."""

    def __init__(self) -> None:
        self._buffers: dict[int, np.ndarray] = {}

    def alloc(self, nbytes: int) -> int:
        """Allocate ``nbytes`` (256-byte aligned, zeroed); return its host address."""
        raw = np.zeros(nbytes + 256, dtype=np.uint8)
        addr = raw.ctypes.data
        pad = (-addr) % 256
        self._buffers[addr + pad] = raw
        return addr + pad

    def _span(self, ptr: int, n: int) -> np.ndarray:
        for base, raw in self._buffers.items():
            start = ptr - raw.ctypes.data
            if base <= ptr and start + n <= raw.nbytes:
                return raw[start:start + n]
        raise ValueError(f"0x{ptr:x}+{n} is not inside one allocated buffer")

    def write(self, ptr: int, data: bytes) -> None:
        """Copy ``data`` to host address ``ptr`` inside an allocated buffer."""
        self._span(ptr, len(data))[:] = np.frombuffer(data, dtype=np.uint8)

    def read(self, ptr: int, n: int) -> bytes:
        """Return ``n`` bytes from host address ``ptr`` inside an allocated buffer."""
        return self._span(ptr, n).tobytes()

    def launch(self, file: str, kernel: str, grid, block, args, shared_dynamic: int = 0):
        """Run ``kernel`` of ``kernels/<file>.cu`` over ``grid`` x ``block`` to completion."""
        from .cpu_backend import load_cpu_module

        mod = load_cpu_module(KERNELS / f"{file}.cu")
        params = pack_params(args, mod.layout(kernel))
        mod.launch(kernel, _dim3(grid), _dim3(block), params, shared_dynamic)


class EngineDevice(_Device):
    """Kernels' committed PTX run on the emulated GPU in one address space."""

    VA_BASE = 0x10_0000_0000
    compiled = False    # JitDevice: kernels run on the compiling engine where translated

    def __init__(self, vram_size: int = 64 << 20) -> None:
        from gdevd.gpu.mmu import Mmu
        from gdevd.gpu.vram import Vram

        self.vram = Vram(vram_size)
        self.mmu = Mmu()
        self.mmu.set_aperture(0, self.vram.buffer)
        self._next_pa = 0
        self._modules: dict[str, object] = {}

    def alloc(self, nbytes: int) -> int:
        """Map ``nbytes`` rounded up to pages at a fresh VA (VA - VA_BASE == PA)."""
        size = -(-nbytes // PAGE) * PAGE + PAGE  # one unmapped guard page after each buffer
        pa = self._next_pa
        if pa + size > self.vram.size:
            raise MemoryError("test device memory exhausted")
        self._next_pa += size
        self.mmu.map(self.VA_BASE + pa, pa, size - PAGE)
        return self.VA_BASE + pa

    def write(self, ptr: int, data: bytes) -> None:
        """Write ``data`` at device VA ``ptr``."""
        self.mmu.write(ptr, data)

    def read(self, ptr: int, n: int) -> bytes:
        """Read ``n`` bytes at device VA ``ptr``."""
        return self.mmu.read(ptr, n)

    def _module(self, file: str):
        """Load ``kernels/<file>.ptx`` once; its data segment is placed and initialised then,
        and kept across launches as a CUDA module's globals are."""
        if file not in self._modules:
            from gdevd.gpu.ptx import load_module

            mod = load_module((KERNELS / f"{file}.ptx").read_text(), file)
            if self.compiled:
                mod.start_compile(wait=True)
            layout = mod.data_layout()
            data_base = self.alloc(layout.size) if layout.size else 0
            if layout.size:
                self.write(data_base, layout.image)
            self._modules[file] = (mod, data_base)
        return self._modules[file]

    def launch(self, file: str, kernel: str, grid, block, args, shared_dynamic: int = 0):
        """Run ``kernel`` of ``kernels/<file>.ptx`` over ``grid`` x ``block`` to completion."""
        mod, data_base = self._module(file)
        info = mod.kernels[kernel]
        layout = [(p.offset, p.size) for p in info.params]
        params = pack_params(args, layout).ljust(info.param_size, b"\0")
        launch = mod.launch(kernel, grid=_dim3(grid), block=_dim3(block), params=params,
                            mmu=self.mmu, data_base=data_base, shared_dynamic=shared_dynamic)
        while not launch.run():
            pass


class JitDevice(EngineDevice):
    """The committed PTX on the compiling engine (kernels it does not translate yet run on
    the interpreter, as in the daemon)."""

    compiled = True


def _dim3(d) -> tuple[int, int, int]:
    d = (d,) if isinstance(d, int) else tuple(d)
    return tuple(int(v) for v in (d + (1, 1, 1))[:3])


def cdiv(a: int, b: int) -> int:
    """Ceiling division, for grid sizes."""
    return -(-a // b)
