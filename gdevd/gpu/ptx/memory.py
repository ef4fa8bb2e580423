"""A wave's view of memory: global (through the MMU), shared, local, generic windows.

Generic addresses put shared memory at ``SHARED_WINDOW`` and local memory at
``LOCAL_WINDOW``; anything below ``1 << 48`` is a global virtual address and goes through
the context's page table.  Shared (per block) and local (per thread) memory are numpy
buffers owned by the wave; an access outside them faults like an unmapped global address.
"""

from __future__ import annotations

import numpy as np

from gdevd.errors import MmuFault
from gdevd.gpu.mmu import atomic_flat_v

SHARED_WINDOW = 1 << 48
LOCAL_WINDOW = 2 << 48
PARAM_WINDOW = 4 << 48      # kernel parameters (read-only), for cvta.param / __grid_constant__
_WINDOW_SHIFT = 48


def _round16(n: int) -> int:
    return (n + 15) & ~15


class MemSys:
    """Memory of one wave: ``nthreads`` threads in blocks of ``tpb``.

    ``load``/``store``/``atomic`` take per-lane addresses (uint64 arrays) and the lanes'
    thread indices within the wave; they raise :class:`MmuFault` on a bad access.
    """

    def __init__(self, mmu, nthreads: int, tpb: int, shared_size: int, local_size: int):
        self.mmu = mmu
        self.textures = None    # the context's TextureTable (set per launch), for tex
        self.tpb = tpb
        self.shared_size = shared_size
        self.local_size = local_size
        self.sh_stride = _round16(max(shared_size, 1))
        self.lo_stride = _round16(max(local_size, 1))
        self.frames = None      # a wave's CallStack when recursive functions have frames
        self.params = np.zeros(16, np.uint8)   # the launch's parameter buffer (read-only)
        nblocks = nthreads // tpb
        self.shared = np.zeros(nblocks * self.sh_stride if shared_size else 16, np.uint8)
        self.local = np.zeros(nthreads * self.lo_stride if local_size else 16, np.uint8)

    # -- address resolution --------------------------------------------------------------
    def _flat(self, space: str, va: np.ndarray, lanes: np.ndarray, nbytes: int):
        """Byte offsets into the shared or local buffer; faults when out of bounds."""
        if space == "shared":
            limit, stride, owner = self.shared_size, self.sh_stride, lanes // self.tpb
        elif self.frames is not None:
            return self.frames.flat(va, lanes, nbytes)
        else:
            limit, stride, owner = self.local_size, self.lo_stride, lanes
        off = va.astype(np.uint64, copy=False)
        bad = (off + np.uint64(nbytes)) > np.uint64(limit)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise MmuFault(int(va[i]), f"out-of-bounds {space}", index=i)
        return owner.astype(np.int64) * stride + off.astype(np.int64)

    @staticmethod
    def _check_align(va: np.ndarray, align: int) -> None:
        if align > 1:
            bad = (va & np.uint64(align - 1)) != 0
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise MmuFault(int(va[i]), "misaligned", index=i)

    def split_generic(self, va: np.ndarray):
        """Yield ``(space, selector, window-relative address)`` for generic addresses."""
        win = va >> np.uint64(_WINDOW_SHIFT)
        if not win.any():
            yield "global", None, va
            return
        for code, space in ((0, "global"), (1, "shared"), (2, "local"), (4, "param")):
            sel = np.flatnonzero(win == code)
            if sel.size:
                base = np.uint64(code << _WINDOW_SHIFT)
                yield space, sel, va[sel] - base
        bad = (win > 4) | (win == 3)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise MmuFault(int(va[i]), "unmapped", index=i)

    # -- accesses ---------------------------------------------------------------------
    def load_bytes(self, va: int, n: int, lane: int) -> bytes:
        """``load("generic", [va], [lane], uint8, n)`` as bytes, with its faults; one
        thread's shared and local bytes are sliced directly (device printf reads its
        arguments so: ops_printf.py), anything else goes through :meth:`load`."""
        win = va >> _WINDOW_SHIFT
        if win not in (1, 2) or (win == 2 and self.frames is not None):
            return self.load("generic", np.array([va], np.uint64), np.array([lane], np.int64),
                             np.dtype(np.uint8), n).tobytes()
        off = va - (win << _WINDOW_SHIFT)
        if n in (2, 4) and off % n:
            raise MmuFault(off, "misaligned", index=0)
        if win == 1:
            space, limit, base, buf = "shared", self.shared_size, \
                lane // self.tpb * self.sh_stride, self.shared
        else:
            space, limit, base, buf = "local", self.local_size, lane * self.lo_stride, \
                self.local
        if off + n > limit:
            raise MmuFault(off, f"out-of-bounds {space}", index=0)
        return buf[base + off:base + off + n].tobytes()

    def load(self, space: str, va: np.ndarray, lanes: np.ndarray, dt: np.dtype,
             count: int) -> np.ndarray:
        """Load ``count`` consecutive elements of ``dt`` per lane; returns shape (n, count)."""
        va = np.asarray(va, dtype=np.uint64)
        if space == "generic":
            out = np.empty((va.size, count), dtype=dt)
            for sp, sel, rel in self.split_generic(va):
                part = self.load(sp, rel, lanes if sel is None else lanes[sel], dt, count)
                if sel is None:
                    return part
                out[sel] = part
            return out
        w = dt.itemsize
        self._check_align(va, w * count if count in (2, 4) else w)
        if space == "param":
            return self._load_param(va, dt, count)
        if space in ("shared", "local"):
            flat = self._flat(space, va, lanes, w * count)
            buf = self.shared if space == "shared" else self.local
            ix = flat // w
            if count == 1:
                return buf.view(dt)[ix][:, None]
            return buf.view(dt)[ix[:, None] + np.arange(count)]
        vas = va if count == 1 else (va[:, None] + np.arange(0, w * count, w,
                                                             dtype=np.uint64)).ravel()
        raw = self.mmu.load_v(np.ascontiguousarray(vas), w)
        return np.asarray(raw).view(dt).reshape(va.size, count)

    def _load_param(self, off: np.ndarray, dt: np.dtype, count: int) -> np.ndarray:
        """Kernel-parameter loads through an address (``ld.param [%rd]``, generic window)."""
        w = dt.itemsize
        bad = off + np.uint64(w * count) > np.uint64(self.params.size)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise MmuFault(int(off[i]), "out-of-bounds param", index=i)
        ix = off.astype(np.int64) // w
        view = self.params[: self.params.size // w * w].view(dt)
        return view[ix[:, None] + np.arange(count)]

    def store(self, space: str, va: np.ndarray, lanes: np.ndarray, values: np.ndarray) -> None:
        """Store ``values`` (shape (n, count)) at per-lane addresses ``va``."""
        va = np.asarray(va, dtype=np.uint64)
        count = values.shape[1]
        if space == "generic":
            for sp, sel, rel in self.split_generic(va):
                if sel is None:
                    return self.store(sp, rel, lanes, values)
                self.store(sp, rel, lanes[sel], values[sel])
            return None
        dt = values.dtype
        w = dt.itemsize
        if space == "param":
            raise MmuFault(int(va[0]), "protection (kernel parameters are read-only)")
        self._check_align(va, w * count if count in (2, 4) else w)
        if space in ("shared", "local"):
            flat = self._flat(space, va, lanes, w * count)
            buf = self.shared if space == "shared" else self.local
            ix = flat // w
            if count == 1:
                buf.view(dt)[ix] = values[:, 0]
            else:
                buf.view(dt)[ix[:, None] + np.arange(count)] = values
            return None
        vas = va if count == 1 else (va[:, None] + np.arange(0, w * count, w,
                                                             dtype=np.uint64)).ravel()
        self.mmu.store_v(np.ascontiguousarray(vas), np.ascontiguousarray(values).view(
            np.dtype(f"u{w}")).ravel())
        return None

    def atomic(self, space: str, va: np.ndarray, lanes: np.ndarray, op: int, typ: int,
               dt: np.dtype, a, b=None) -> np.ndarray:
        """Atomic ``op`` per lane (serialized in lane order); returns the old values."""
        va = np.asarray(va, dtype=np.uint64)
        n = va.size
        a = np.broadcast_to(np.asarray(a, dtype=dt), (n,))
        b = None if b is None else np.broadcast_to(np.asarray(b, dtype=dt), (n,))
        if space == "generic":
            out = np.empty(n, dtype=dt)
            for sp, sel, rel in self.split_generic(va):
                if sel is None:
                    return self.atomic(sp, rel, lanes, op, typ, dt, a, b)
                out[sel] = self.atomic(sp, rel, lanes[sel], op, typ, dt, a[sel],
                                       None if b is None else b[sel])
            return out
        self._check_align(va, dt.itemsize)
        if space in ("shared", "local"):
            flat = self._flat(space, va, lanes, dt.itemsize)
            buf = self.shared if space == "shared" else self.local
            return atomic_flat_v(buf, flat.astype(np.uint64), op, typ, a, b)
        old = self.mmu.atomic_v(np.ascontiguousarray(va), op, typ, np.ascontiguousarray(a),
                                None if b is None else np.ascontiguousarray(b))
        return np.asarray(old).view(dt)
