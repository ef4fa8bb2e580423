"""Guest work as pieces: a kernel (PTX, or CUDA source compiled once), one launch per piece.

A :class:`Piece` is one launch of a :class:`Kernel`: its grid, and its arguments, each a
scalar (passed by the kernel's declared parameter type), an :class:`In` array (copied to the
device), an :class:`Out` array (allocated, copied back) or an :class:`InOut` array (both).
Pieces are pickled to workers as they are; :func:`run_piece` executes one in the current CUDA
context and returns its output arrays in argument order.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Kernel:
    """A kernel of a PTX module: ``ptx`` text, entry ``name``, thread ``block`` shape."""

    ptx: str
    name: str
    block: tuple[int, int, int] = (1, 1, 1)

    @property
    def module_id(self) -> str:
        """Content hash of the PTX: a worker loads each module once."""
        return hashlib.sha256(self.ptx.encode()).hexdigest()[:16]

    @classmethod
    def from_file(cls, path: str, name: str, block: tuple[int, int, int] = (1, 1, 1)) -> Kernel:
        """The kernel ``name`` of the PTX file at ``path``."""
        with open(path) as f:
            return cls(f.read(), name, block)

    @classmethod
    def from_cuda(cls, source: str, name: str, block: tuple[int, int, int] = (1, 1, 1),
                  nvcc: str = "nvcc", arch: str = "compute_75") -> Kernel:
        """Compile CUDA ``source`` once with ``nvcc -ptx`` on the client (as kernels/ are built)
        and take ``name``.

        Raises RuntimeError with nvcc's diagnostics when compilation fails.
        """
        with tempfile.TemporaryDirectory(prefix="gdev-grid-") as tmp:
            cu, ptx = os.path.join(tmp, "k.cu"), os.path.join(tmp, "k.ptx")
            with open(cu, "w") as f:
                f.write(source)
            done = subprocess.run([nvcc, "-ptx", f"-arch={arch}", "-o", ptx, cu],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"nvcc failed: {done.stderr.strip()}")
            return cls.from_file(ptx, name, block)


@dataclass(frozen=True)
class In:
    """An input array, copied to the device before the launch."""

    array: np.ndarray


@dataclass(frozen=True)
class Out:
    """An output array of ``shape`` and ``dtype``, copied back after the launch."""

    shape: tuple[int, ...]
    dtype: Any = np.uint32


@dataclass(frozen=True)
class InOut:
    """An array copied to the device and back."""

    array: np.ndarray


@dataclass(frozen=True)
class Piece:
    """One launch: ``grid`` shape and ``args`` (scalars, In, Out, InOut), with an id unique in
    its job; the id makes a piece idempotent (results are kept once per id)."""

    kernel: Kernel
    grid: tuple[int, int, int]
    args: tuple[Any, ...] = field(default_factory=tuple)
    piece_id: int = 0

    def cost(self) -> int:
        """Threads launched: the unit in which nodes report guest throughput."""
        g, b = self.grid, self.kernel.block
        return g[0] * g[1] * g[2] * b[0] * b[1] * b[2]


def run_piece(cuda: Any, function: Any, piece: Piece) -> list[np.ndarray]:
    """Run ``piece`` with the CUDA ``function`` in the current context; its outputs.

    Device memory is freed on every path, so a failed piece leaks nothing into the guest
    context that the next piece reuses.
    """
    allocs: list[int] = []
    params: list[Any] = []
    back: list[tuple[int, np.ndarray]] = []
    try:
        for arg in piece.args:
            params.append(_stage(cuda, arg, allocs, back))
        b = piece.kernel.block
        cuda.cuLaunchKernel(function, *piece.grid, *b, 0, None, params)
        cuda.cuCtxSynchronize()
        for dptr, host in back:
            cuda.cuMemcpyDtoH(host, dptr)
        return [host for _, host in back]
    finally:
        for dptr in allocs:
            cuda.cuMemFree(dptr)


def _stage(cuda: Any, arg: Any, allocs: list[int], back: list[Any]) -> Any:
    """The launch parameter for ``arg``; arrays get device memory (recorded in ``allocs``)."""
    if isinstance(arg, (In, InOut)):
        host = np.ascontiguousarray(arg.array)
        dptr = cuda.cuMemAlloc(max(host.nbytes, 1))
        allocs.append(dptr)
        if host.nbytes:
            cuda.cuMemcpyHtoD(dptr, host)
        if isinstance(arg, InOut):
            back.append((dptr, host.copy()))
        return dptr
    if isinstance(arg, Out):
        host = np.zeros(arg.shape, dtype=arg.dtype)
        dptr = cuda.cuMemAlloc(max(host.nbytes, 1))
        allocs.append(dptr)
        back.append((dptr, host))
        return dptr
    return arg
