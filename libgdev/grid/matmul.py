"""The guest workload of the paper's case study: a matrix multiply split into row pieces."""

from __future__ import annotations

import functools
import os

import numpy as np

from .pieces import In, Kernel, Out, Piece

KERNELS_PTX = os.path.join(os.path.dirname(__file__), "kernels", "grid.ptx")
BLOCK = 16


@functools.cache
def matmul_kernel() -> Kernel:
    """``matmul_rows(a, b, c, rows, m, n)``: c (rows x n) = a (rows x m) * b, uint32."""
    return Kernel.from_file(KERNELS_PTX, "matmul_rows", (BLOCK, BLOCK, 1))


def check_operands(a: np.ndarray, b: np.ndarray) -> None:
    """ValueError unless ``a @ b`` is a product of two matrices."""
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"cannot multiply {a.shape} by {b.shape}")


def matmul_piece(a: np.ndarray, b: np.ndarray, r0: int, rows: int, pid: int = 0) -> Piece:
    """The piece computing rows [r0, r0 + rows) of ``a @ b`` (uint32 contiguous operands);
    its single output is that block of rows."""
    block = a[r0:r0 + rows]
    h, (m, n) = block.shape[0], b.shape
    grid = (-(-n // BLOCK), -(-h // BLOCK), 1)
    args = (In(block), In(b), Out((h, n), np.uint32), np.uint32(h), np.uint32(m),
            np.uint32(n))
    return Piece(matmul_kernel(), grid, args, pid)


def matmul_pieces(a: np.ndarray, b: np.ndarray, rows: int = 16) -> list[Piece]:
    """Pieces computing ``a @ b`` (uint32, modulo 2^32) ``rows`` result rows at a time; each
    piece's single output is its block of rows, in order."""
    check_operands(a, b)
    if rows < 1:
        raise ValueError(f"rows per piece must be positive, not {rows}")
    a, b = np.ascontiguousarray(a, np.uint32), np.ascontiguousarray(b, np.uint32)
    return [matmul_piece(a, b, r0, rows, pid)
            for pid, r0 in enumerate(range(0, a.shape[0], rows))]


def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` modulo 2^32 computed on the CPU (exact: uint64 products wrap like uint32)."""
    return (a.astype(np.uint64) @ b.astype(np.uint64)).astype(np.uint32)
