"""Atomic read-modify-write on a flat byte buffer, serialized in element order.

Used for shared memory (and by test stand-ins of the MMU).  The result is exactly what
executing the elements one after another in index order would give: ``old[i]`` is the value
element ``i`` saw, and the buffer ends with every update applied.
"""

from __future__ import annotations

import numpy as np

ATOM_ADD, ATOM_MIN, ATOM_MAX, ATOM_EXCH, ATOM_CAS = 0, 1, 2, 3, 4
ATOM_AND, ATOM_OR, ATOM_XOR, ATOM_INC, ATOM_DEC = 5, 6, 7, 8, 9
T_U32, T_S32, T_U64, T_S64, T_F32, T_F64 = 0, 1, 2, 3, 4, 5

ATOM_DTYPES = {T_U32: np.dtype(np.uint32), T_S32: np.dtype(np.int32),
               T_U64: np.dtype(np.uint64), T_S64: np.dtype(np.int64),
               T_F32: np.dtype(np.float32), T_F64: np.dtype(np.float64)}


def apply_op(op: int, cur: np.ndarray, a: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    """The new value of one atomic step (``cur`` = old memory, ``a``/``b`` operands)."""
    if op == ATOM_ADD:
        return cur + a
    if op == ATOM_MIN:
        return np.minimum(cur, a)
    if op == ATOM_MAX:
        return np.maximum(cur, a)
    if op == ATOM_EXCH:
        return a
    if op == ATOM_CAS:
        return np.where(cur == a, b, cur)
    if op == ATOM_AND:
        return cur & a
    if op == ATOM_OR:
        return cur | a
    if op == ATOM_XOR:
        return cur ^ a
    if op == ATOM_INC:  # ((old >= a) ? 0 : old + 1)
        return np.where(cur >= a, cur.dtype.type(0), cur + cur.dtype.type(1))
    if op == ATOM_DEC:  # ((old == 0) | (old > a)) ? a : old - 1
        return np.where((cur == 0) | (cur > a), a, cur - cur.dtype.type(1))
    raise ValueError(f"unknown atomic op {op}")


def flat_atomic(buf: np.ndarray, offsets: np.ndarray, op: int, typ: int,
                a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """Apply atomic ``op`` of element type ``typ`` at byte ``offsets`` of uint8 ``buf``.

    Offsets must be aligned and in bounds (the caller checks).  Returns the old values.
    """
    dt = ATOM_DTYPES[typ]
    view = buf.view(dt)
    ix = np.asarray(offsets, dtype=np.int64) // dt.itemsize
    a = np.broadcast_to(np.asarray(a, dtype=dt), ix.shape)
    if b is not None:
        b = np.broadcast_to(np.asarray(b, dtype=dt), ix.shape)
    if op == ATOM_ADD and dt.kind in "iu":
        return _int_add(view, ix, a)
    old = np.empty(ix.shape, dtype=dt)
    pending = np.arange(ix.size)
    while pending.size:
        _, first = np.unique(ix[pending], return_index=True)
        sel = pending[first]
        cur = view[ix[sel]]
        old[sel] = cur
        view[ix[sel]] = apply_op(op, cur, a[sel], None if b is None else b[sel])
        keep = np.ones(pending.size, dtype=bool)
        keep[first] = False
        pending = pending[keep]
    return old


def _int_add(view: np.ndarray, ix: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Wrapping integer add: old values from a segmented exclusive prefix sum."""
    order = np.argsort(ix, kind="stable")
    ixs, avals = ix[order], a[order]
    with np.errstate(over="ignore"):
        incl = np.cumsum(avals, dtype=view.dtype)
        excl = incl - avals
        start = np.flatnonzero(np.r_[True, ixs[1:] != ixs[:-1]])
        seg = np.repeat(start, np.diff(np.r_[start, ixs.size]))
        base = view[ixs[start]]
        olds = np.repeat(base, np.diff(np.r_[start, ixs.size])) + (excl - excl[seg])
        last = np.r_[start[1:], ixs.size] - 1
        view[ixs[start]] = olds[last] + avals[last]
    old = np.empty_like(olds)
    old[order] = olds
    return old
