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
    if op in _UFUNCS or op == ATOM_EXCH:
        order = np.argsort(ix, kind="stable")
        ixs = ix[order]
        starts = np.flatnonzero(np.r_[True, ixs[1:] != ixs[:-1]])
        ends = np.r_[starts[1:], ixs.size]
        if op == ATOM_EXCH or starts.size <= int((ends - starts).max(initial=0)):
            olds = _segmented(view, ixs, a[order], op, starts, ends)
            old = np.empty_like(olds)
            old[order] = olds
            return old
    if op in (ATOM_CAS, ATOM_INC, ATOM_DEC) and ix.size > 16:
        _, counts = np.unique(ix, return_counts=True)
        if counts.max() > 16:       # heavy contention: a plain serial loop is cheaper
            return _serial(view, ix, op, a, b)
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


def _serial(view, ix, op, a, b) -> np.ndarray:
    """One element at a time on Python integers (cas/inc/dec on integer types)."""
    old = np.empty(ix.size, dtype=view.dtype)
    al = a.tolist()
    bl = b.tolist() if b is not None else al
    for k, i in enumerate(ix.tolist()):
        cur = view.item(i)
        old[k] = cur
        x = al[k]
        if op == ATOM_CAS:
            if cur == x:
                view[i] = bl[k]
        elif op == ATOM_INC:
            view[i] = 0 if cur >= x else cur + 1
        else:
            view[i] = x if cur == 0 or cur > x else cur - 1
    return old


_UFUNCS = {ATOM_ADD: np.add, ATOM_MIN: np.minimum, ATOM_MAX: np.maximum,
           ATOM_AND: np.bitwise_and, ATOM_OR: np.bitwise_or, ATOM_XOR: np.bitwise_xor}


def _segmented(view, ixs, avals, op, starts, ends) -> np.ndarray:
    """Serial old values for elements sorted by address (segments = one address each)."""
    if op == ATOM_EXCH:
        first = np.zeros(ixs.size, dtype=bool)
        first[starts] = True
        prev = np.r_[avals[:1], avals[:-1]]
        olds = np.where(first, view[ixs], prev)
        view[ixs[ends - 1]] = avals[ends - 1]
        return olds
    uf = _UFUNCS[op]
    olds = np.empty(ixs.size, dtype=view.dtype)
    for s, e in zip(starts.tolist(), ends.tolist()):
        seq = np.empty(e - s + 1, dtype=view.dtype)
        seq[0] = view[ixs[s]]
        seq[1:] = avals[s:e]
        acc = uf.accumulate(seq, dtype=view.dtype)
        olds[s:e] = acc[:-1]
        view[ixs[s]] = acc[-1]
    return olds


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
