"""An address space: the emulated GPU's MMU page table, in C, behind a checked wrapper.

Theory of operation
-------------------
Every device-side access (copy engines, kernels' loads, stores and atomics) goes through an
``Mmu``: a two-level page table over 40-bit virtual addresses with 4 KiB pages.  A page-table
entry names an *aperture* (a backing region registered with :meth:`Mmu.set_aperture`: the
device's VRAM, a pinned host buffer...), a page inside it, and access flags.  ``map`` and
``unmap`` are all-or-nothing.  Scalar and direct accesses check the whole range before
moving a byte; vector accesses run in index order and stop at the first faulting element,
raising :class:`~gdevd.errors.MmuFault` with that element's index (earlier ones took
effect, as on a GPU where the faulting warp dies mid-kernel).  The C side holds a
reader-writer lock, so map/unmap wait for accesses in flight on other threads.
"""

from __future__ import annotations

import errno
from types import TracebackType
from typing import Any

import numpy as np

from gdevd.errors import GdevError, MmuFault
from gdevd.gpu._core import ffi, lib
from gdevd.gpu._cutil import (
    as_int,
    as_typed,
    as_u64_vector,
    check,
    check_fault,
    readable,
    writable,
)

PAGE_SIZE = lib.GDEV_PAGE_SIZE
VA_BITS = lib.GDEV_VA_BITS
APERTURES = lib.GDEV_APERTURES
ACC_READ = lib.GDEV_ACC_READ
ACC_WRITE = lib.GDEV_ACC_WRITE
ATOM_ADD, ATOM_MIN, ATOM_MAX = lib.GDEV_ATOM_ADD, lib.GDEV_ATOM_MIN, lib.GDEV_ATOM_MAX
ATOM_EXCH, ATOM_CAS, ATOM_AND = lib.GDEV_ATOM_EXCH, lib.GDEV_ATOM_CAS, lib.GDEV_ATOM_AND
ATOM_OR, ATOM_XOR = lib.GDEV_ATOM_OR, lib.GDEV_ATOM_XOR
ATOM_INC, ATOM_DEC = lib.GDEV_ATOM_INC, lib.GDEV_ATOM_DEC
T_U32, T_S32, T_U64 = lib.GDEV_T_U32, lib.GDEV_T_S32, lib.GDEV_T_U64
T_S64, T_F32, T_F64 = lib.GDEV_T_S64, lib.GDEV_T_F32, lib.GDEV_T_F64

#: numpy dtype of each atomic element type
ATOMIC_DTYPES: dict[int, np.dtype] = {
    T_U32: np.dtype(np.uint32), T_S32: np.dtype(np.int32), T_U64: np.dtype(np.uint64),
    T_S64: np.dtype(np.int64), T_F32: np.dtype(np.float32), T_F64: np.dtype(np.float64),
}
_WIDTH_DTYPES = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64, 16: np.uint64}
_ACCESS_RW = ACC_READ | ACC_WRITE


def _vector_result(ret: int, what: str) -> int:
    """-1 -> -1; an index passes through; ``-1 - errno`` raises GdevError."""
    if ret < -1:
        raise GdevError(-1 - ret, what)
    return ret


def _atomic_args(vas: Any, op: int, typ: int, a: Any, b: Any) -> tuple[Any, ...]:
    """Checked (vas, dtype, a, b) arrays for an atomic call."""
    vas = as_u64_vector(vas)
    dt = ATOMIC_DTYPES.get(typ)
    if dt is None or not ATOM_ADD <= as_int(op, "op", 0, 64) <= ATOM_DEC:
        raise GdevError(errno.EINVAL, f"unknown atomic op {op} or type {typ}")
    if dt.kind == "f" and op not in (ATOM_ADD, ATOM_EXCH):
        raise GdevError(errno.EINVAL, "float atomics support only ADD and EXCH")
    if (op == ATOM_CAS) != (b is not None):
        raise GdevError(errno.EINVAL, "b is required for CAS and only for CAS")
    a = as_typed(a, dt, len(vas), "a")
    b = as_typed(b, dt, len(vas), "b") if b is not None else None
    return vas, dt, a, b


def _ptr(arr: np.ndarray | None, ctype: str = "void *") -> Any:
    return ffi.NULL if arr is None else ffi.cast(ctype, arr.ctypes.data)


def atomic_flat_v(
    buf: np.ndarray, offsets: np.ndarray, op: int, typ: int, a: Any, b: Any = None
) -> np.ndarray:
    """Atomics on a flat ``np.uint8`` buffer (e.g. a block's shared memory).

    Same semantics as :meth:`Mmu.atomic_v` with byte offsets instead of virtual addresses;
    an offset out of bounds raises MmuFault("unmapped"), a misaligned one "misaligned".
    """
    if not isinstance(buf, np.ndarray) or buf.dtype != np.uint8 or not buf.flags.c_contiguous:
        raise GdevError(errno.EINVAL, "buf must be a C-contiguous np.uint8 array")
    offsets, dt, a, b = _atomic_args(offsets, op, typ, a, b)
    old = np.empty(len(offsets), dt)
    ptr, size = writable(buf, "buf")
    idx = _vector_result(
        lib.gdev_flat_atomic_v(ptr, size, _ptr(offsets, "uint64_t *"), len(offsets), op, typ,
                               _ptr(a), _ptr(b), _ptr(old)),
        "flat atomic",
    )
    if idx >= 0:
        off = int(offsets[idx])
        reason = "misaligned" if off % dt.itemsize else "unmapped"
        raise MmuFault(off, reason, idx)
    return old


class Mmu:
    """One address space: a page table over 40-bit VAs with 4 KiB pages (see module doc)."""

    def __init__(self) -> None:
        out = ffi.new("struct gdev_mmu **")
        check(lib.gdev_mmu_create(out), "create address space")
        self._mmu: Any = out[0]
        # kept even after close(): copy-engine jobs in flight may still use the memory
        self._apertures: list[tuple[Any, Any] | None] = [None] * APERTURES

    @property
    def _p(self) -> Any:
        if self._mmu is None:
            raise GdevError(errno.EBADF, "address space is closed")
        return self._mmu

    def set_aperture(self, index: int, buf: Any) -> None:
        """Register writable ``buf`` as aperture ``index`` (0..63); None unregisters.

        The usable size is ``buf``'s size rounded down to whole pages.  EBUSY while pages
        are mapped to the aperture; EINVAL for a bad index or a buffer without a page.
        """
        index = as_int(index, "aperture", 0, APERTURES - 1)
        if buf is None:
            check(lib.gdev_mmu_set_aperture(self._p, index, ffi.NULL, 0), "unset aperture")
            self._apertures[index] = None
            return
        ptr, size = writable(buf, "aperture buffer")
        size -= size % PAGE_SIZE
        if not size:
            raise GdevError(errno.EINVAL, "aperture buffer is smaller than a page")
        check(lib.gdev_mmu_set_aperture(self._p, index, ptr, size), f"set aperture {index}")
        self._apertures[index] = (buf, ptr)

    def map(
        self, va: int, pa: int, size: int, *, aperture: int = 0, flags: int = _ACCESS_RW
    ) -> None:
        """Map ``size`` bytes at ``va`` to ``pa`` in ``aperture``, all or nothing.

        EINVAL: misaligned, zero size, bad flags or unknown aperture; ERANGE: beyond 40 bits
        or the aperture; EEXIST: a page is already mapped.
        """
        va, pa, size = as_int(va, "va"), as_int(pa, "pa"), as_int(size, "size")
        aperture = as_int(aperture, "aperture", 0, APERTURES - 1)
        flags = as_int(flags, "flags", 0, 255)
        check(lib.gdev_mmu_map(self._p, va, pa, size, aperture, flags),
              f"map 0x{va:x}+0x{size:x} -> {aperture}:0x{pa:x}")

    def unmap(self, va: int, size: int) -> None:
        """Unmap ``size`` bytes at ``va``; ENOENT (nothing changes) unless all are mapped."""
        va, size = as_int(va, "va"), as_int(size, "size")
        check(lib.gdev_mmu_unmap(self._p, va, size), f"unmap 0x{va:x}+0x{size:x}")

    def mapped_pages(self) -> int:
        """Number of pages currently mapped (for invariant checks)."""
        return int(lib.gdev_mmu_mapped_pages(self._p))

    def translate(self, va: int, access: int = ACC_READ) -> tuple[int, int]:
        """(aperture, physical address) of ``va``; MmuFault if unmapped or not allowed."""
        va = as_int(va, "va")
        ap, pa = ffi.new("int *"), ffi.new("uint64_t *")
        check_fault(lib.gdev_mmu_translate(self._p, va, access, ap, pa), va, "translate")
        return ap[0], pa[0]

    def _vector_fault(self, vas: np.ndarray, idx: int, width: int, access: int) -> MmuFault:
        va = int(vas[idx])
        if va % width:
            return MmuFault(va, "misaligned", idx)
        ap, pa = ffi.new("int *"), ffi.new("uint64_t *")
        ret = lib.gdev_mmu_translate(self._p, va, access, ap, pa)
        return MmuFault(va, "protection" if ret == -errno.EACCES else "unmapped", idx)

    def translate_v(self, vas: np.ndarray, access: int = ACC_READ) -> np.ndarray:
        """``(aperture << 48) | pa`` for every address; MmuFault(index=first bad element)."""
        vas = as_u64_vector(vas)
        out = np.empty(len(vas), np.uint64)
        idx = lib.gdev_mmu_translate_v(self._p, _ptr(vas, "uint64_t *"), len(vas), access,
                                       _ptr(out, "uint64_t *"))
        if _vector_result(idx, "translate_v") >= 0:
            raise self._vector_fault(vas, idx, 1, access)
        return out

    def load_v(self, vas: np.ndarray, width: int) -> np.ndarray:
        """Load ``width``-byte elements (1,2,4,8 -> uint8..uint64; 16 -> (n, 2) uint64)."""
        vas = as_u64_vector(vas)
        if width not in _WIDTH_DTYPES:
            raise GdevError(errno.EINVAL, f"width {width} not in 1, 2, 4, 8, 16")
        shape = (len(vas), 2) if width == 16 else (len(vas),)
        out = np.empty(shape, _WIDTH_DTYPES[width])
        idx = lib.gdev_mmu_load_v(self._p, _ptr(vas, "uint64_t *"), len(vas), width, _ptr(out))
        if _vector_result(idx, "load_v") >= 0:
            raise self._vector_fault(vas, idx, width, ACC_READ)
        return out

    def store_v(self, vas: np.ndarray, values: Any) -> None:
        """Store ``values`` (n elements of 1..8 bytes, or (n, 2) of 8 bytes) in index order.

        The width is the values' itemsize (x2 for shape (n, 2)); any dtype of that size is
        stored by its bits (float32 values are 4-byte stores).
        """
        vas = as_u64_vector(vas)
        values = np.ascontiguousarray(values)
        width = values.dtype.itemsize * (2 if values.ndim == 2 else 1)
        if (values.shape not in ((len(vas),), (len(vas), 2))
                or width not in _WIDTH_DTYPES or (values.ndim == 2 and width != 16)):
            raise GdevError(errno.EINVAL, f"values of shape {values.shape} {values.dtype}")
        idx = lib.gdev_mmu_store_v(self._p, _ptr(vas, "uint64_t *"), len(vas), width,
                                   _ptr(values))
        if _vector_result(idx, "store_v") >= 0:
            raise self._vector_fault(vas, idx, width, ACC_WRITE)

    def atomic_v(
        self, vas: np.ndarray, op: int, typ: int, a: Any, b: Any = None
    ) -> np.ndarray:
        """Atomic RMWs in index order; returns the old values (dtype of ``typ``).

        ``a`` is the operand (scalar or per element); CAS takes ``a``=compare, ``b``=new.
        INC/DEC follow CUDA (inc: old >= a ? 0 : old+1; dec: old == 0 or old > a ? a :
        old-1); float types support ADD and EXCH only.  Needs read and write access.
        """
        vas, dt, a, b = _atomic_args(vas, op, typ, a, b)
        old = np.empty(len(vas), dt)
        idx = lib.gdev_mmu_atomic_v(self._p, _ptr(vas, "uint64_t *"), len(vas), op, typ,
                                    _ptr(a), _ptr(b), _ptr(old))
        if _vector_result(idx, "atomic_v") >= 0:
            raise self._vector_fault(vas, idx, dt.itemsize, _ACCESS_RW)
        return old

    def read_into(self, va: int, out: Any) -> None:
        """Fill writable buffer ``out`` from ``va`` (any alignment; checked before moving)."""
        va = as_int(va, "va")
        ptr, size = writable(out, "out")
        fault = ffi.new("uint64_t *")
        ret = lib.gdev_mmu_read(self._p, va, ptr, size, fault)
        check_fault(ret, fault[0], f"read 0x{va:x}+0x{size:x}")

    def read(self, va: int, size: int) -> bytes:
        """``size`` bytes at ``va`` (the direct path); MmuFault if any byte is unmapped."""
        out = bytearray(as_int(size, "size"))
        self.read_into(va, out)
        return bytes(out)

    def write(self, va: int, data: Any) -> None:
        """Write buffer ``data`` at ``va`` (direct path; checked before moving anything)."""
        va = as_int(va, "va")
        ptr, size = readable(data, "data")
        fault = ffi.new("uint64_t *")
        ret = lib.gdev_mmu_write(self._p, va, ptr, size, fault)
        check_fault(ret, fault[0], f"write 0x{va:x}+0x{size:x}")

    def close(self) -> None:
        """Release the address space (idempotent); queued copy jobs keep it alive."""
        if getattr(self, "_mmu", None) is not None:
            lib.gdev_mmu_put(self._mmu)
            self._mmu = None

    def __enter__(self) -> Mmu:
        return self

    def __exit__(
        self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()
