"""WMMA fragments of every element type: shapes, per-lane layout, register packing and the
arithmetic of ``wmma.mma`` (used by :mod:`ops_wmma`).

Fragments are opaque in PTX, so the engine picks its layout: lane ``l`` holds elements
``l*E .. l*E+E-1`` of the fragment's matrix in row-major *logical* order, ``E`` being the
matrix's size over 32 (``.f16`` A/B fragments are the exception PTX imposes: 16 halves in 8
registers per lane for every shape, so lane l holds ``l*16 ..`` modulo the matrix size).
The elements are packed into the PTX registers in that order: two ``.f16``/``.bf16``, four
``.s8``/``.u8``, one ``.tf32``/``.f32``/``.s32`` per ``.b32`` register, one ``.f64`` per
``.f64`` register, so per-element code (``frag.x[i] *= alpha``) sees consistent values.

Arithmetic (one result per element, independent of the order a GPU would use):

* ``.f16``, ``.bf16`` and ``.tf32``: every product is exact in float64 (11, 8 or 11
  significant bits a factor), C plus the K products is summed in float64 in k order and
  rounded once to the accumulator type (a GPU's fp32 accumulation rounds more often: results
  here are at least as accurate, and the same on both engines).  A ``.tf32``
  element is the ``.f32`` bit pattern with its low 13 bits ignored, as the tensor cores read
  it (truncation; programs round first with ``cvt.rna.tf32.f32``, see tf32.py);
* ``.s8``/``.u8``: exact in 64-bit integers, then wrapped to ``.s32``, or clamped to its range
  with ``.satfinite``;
* ``.f64`` (m8n8k4 ``.rn``): ``d = fma(a[k], b[k], d)`` for k = 0..3 from ``d = c``, each
  single-rounded to nearest;
* ``.satfinite`` on a floating-point result turns +-infinity into the largest finite value
  of the result type (NaN stays NaN).
"""

from __future__ import annotations

import numpy as np

from .fma64 import fma_f64

SHAPES = {"m16n16k16": (16, 16, 16), "m32n8k16": (32, 8, 16), "m8n32k16": (8, 32, 16),
          "m16n16k8": (16, 16, 8), "m8n8k4": (8, 8, 4)}
# the element types each shape takes, for A/B and for C/D
_AB_TYPES = {"m16n16k8": {"tf32"}, "m8n8k4": {"f64"}}
_CD_TYPES = {"m16n16k8": {"f32"}, "m8n8k4": {"f64"}}
_AB_DEFAULT, _CD_DEFAULT = {"f16", "bf16", "s8", "u8"}, {"f16", "f32", "s32"}
# element type -> its dtype in memory (tf32 and bf16 as raw bits)
MEM_DT: dict[str, np.dtype] = {"f16": np.dtype(np.float16), "bf16": np.dtype(np.uint16),
          "tf32": np.dtype(np.uint32), "s8": np.dtype(np.int8), "u8": np.dtype(np.uint8),
          "f32": np.dtype(np.float32), "s32": np.dtype(np.int32),
          "f64": np.dtype(np.float64)}


class Frag:
    """Layout of one fragment: ``rows x cols`` matrix, ``per_lane`` elements in ``nregs``
    registers read and written as ``reg_t`` bits, ``table[lane]`` the lane's row-major
    element indices (WMMA's, see above, unless ``table`` gives them: mma.sync's)."""

    def __init__(self, kind: str, shape, elem: str, table: np.ndarray | None = None) -> None:
        m, n, k = shape
        self.kind, self.elem = kind, elem
        self.rows, self.cols = {"a": (m, k), "b": (k, n), "c": (m, n), "d": (m, n)}[kind]
        size = self.rows * self.cols
        if table is None:
            self.per_lane = 16 if elem == "f16" and kind in "ab" else size // 32
            table = (np.arange(32)[:, None] * self.per_lane + np.arange(self.per_lane)) % size
        self.per_lane = table.shape[1]
        self.table = table
        self.mem_dt = MEM_DT[elem]
        self.reg_t = "b64" if elem == "f64" else "b32"
        self.nregs = self.per_lane * self.mem_dt.itemsize // (8 if elem == "f64" else 4)


def frag(kind: str, shape_name: str, elem: str) -> Frag | None:
    """The fragment, or None if ``elem`` is not a type of ``kind`` for that shape."""
    ab = kind in ("a", "b")
    allowed = (_AB_TYPES if ab else _CD_TYPES).get(shape_name, _AB_DEFAULT if ab else _CD_DEFAULT)
    return Frag(kind, SHAPES[shape_name], elem) if elem in allowed else None


def pack(vals: np.ndarray, f: Frag) -> np.ndarray:
    """Elements (n, per_lane) of the memory dtype -> register bits (n, nregs)."""
    reg_dt = np.dtype(np.uint64 if f.reg_t == "b64" else np.uint32)
    return np.ascontiguousarray(vals.astype(f.mem_dt, copy=False)).view(reg_dt)


def unpack(regs: list, f: Frag, n: int) -> np.ndarray:
    """Register bits (one array per register) -> elements (n, per_lane) of the memory dtype."""
    reg_dt = np.dtype(np.uint64 if f.reg_t == "b64" else np.uint32)
    cols = [np.broadcast_to(np.asarray(r, reg_dt), (n,)) for r in regs]
    return np.ascontiguousarray(np.stack(cols, axis=1)).view(f.mem_dt)


def values(elems: np.ndarray, elem: str) -> np.ndarray:
    """Elements as the numbers ``mma`` computes with: float64 (exact for every float type),
    int64 for the integers."""
    if elem == "bf16":
        return (elems.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    if elem == "tf32":
        return (elems & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)
    if elem in ("s8", "u8", "s32"):
        return elems.astype(np.int64)
    return elems.astype(np.float64)


def multiply(am, bm, cm, ab: str, d: str, satfinite: bool) -> np.ndarray:
    """D = A x B + C per warp (arrays (warps, rows, cols) from :func:`values`), as the
    module docstring says; returns D in the memory dtype of ``d``."""
    if ab in ("s8", "u8"):
        acc = np.matmul(am, bm) + cm
        if satfinite:
            acc = np.clip(acc, -2**31, 2**31 - 1)
        return acc.astype(np.int64).astype(np.uint32).view(np.int32)
    out = cm.astype(np.float64)
    for k in range(am.shape[2]):
        a, b = am[:, :, k, None], bm[:, None, k, :]
        out = fma_f64(a, b, out) if ab == "f64" else out + a * b     # a * b is exact
    with np.errstate(over="ignore"):
        res = out.astype(MEM_DT[d])
    if satfinite:
        big = np.finfo(res.dtype).max
        res = np.where(np.isinf(res), np.copysign(big, res), res).astype(res.dtype)
    return res
