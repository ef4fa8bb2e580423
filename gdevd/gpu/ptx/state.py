"""Per-wave machine state: register file, per-thread param storage, special registers.

Each PTX register is one numpy array over the wave's threads, of its declared type; an
instruction of another type of the same width reads and writes a ``.view`` of it (bound
once, when the wave's closures are built).  Readers and writers take ``idx``: ``None`` for
all threads of the wave, else an int array of lane indices.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .memory import MemSys
from .printorder import BlockOrder
from .ptxtypes import DTYPES, SIGNED, UNSIGNED, dtype_of, scalar
from .syntax import Imm, Not, Reg, Sink, Special, Sym


class Geometry:
    """Grid and block shape of a launch and the block range of one wave."""

    def __init__(self, grid, block, first_block: int, nblocks: int) -> None:
        self.grid, self.block = tuple(grid), tuple(block)
        self.tpb = block[0] * block[1] * block[2]
        self.first_block, self.nblocks = first_block, nblocks
        self.n = nblocks * self.tpb


class Env:
    """Register file and accessors of one wave (see module docstring)."""

    def __init__(self, kernel, geom: Geometry, mem: MemSys, params: bytes,
                 symbols: dict[str, tuple[str, int]], dyn_shared: int = 0,
                 data_base: int = 0) -> None:
        self.kernel = kernel
        self.geom = geom
        self.n = geom.n
        self.mem = mem
        self.params = np.frombuffer(params, dtype=np.uint8)
        mem.params = self.params
        self.symbols = symbols   # name -> (space, address; for "global": offset in data)
        self.data_base = data_base
        self.dyn_shared = dyn_shared
        self.kparam_cache: dict[tuple, np.ndarray] = {}
        self.regs = {name: np.zeros(self.n, dtype=dtype_of(t))
                     for name, t in kernel.regs.items()}
        self.pvars = {name: np.zeros((self.n, max(size, 1)), dtype=np.uint8)
                      for name, size in kernel.pvars.items()}
        self.lanes_all = np.arange(self.n, dtype=np.int64)
        self.printf: BlockOrder | None = None   # the launch's text in block order, per launch
        self.heap = None         # the launch's heap allocator (ops_heap.py), set per launch
        # the grid workspace of a cooperative launch (0 otherwise), set per launch: read
        # through %envreg1 (high half) and %envreg2 (low half), as the driver passes it
        self.grid_ws = 0
        # the grid's device-runtime state (devrt.GridState; None without one) and its
        # threads' last errors (ops_devrt.py), set per launch
        self.devrt: Any = None
        self.devrt_errors: np.ndarray | None = None
        self._special: dict[str, object] = {}
        self._special_t: dict[tuple[str, str], np.ndarray] = {}

    def reset(self, params: bytes, data_base: int, mmu, first_block: int) -> None:
        """Make this (already bound) wave state fresh for another launch of the same shape:
        everything the closures captured is updated in place."""
        self.params = np.frombuffer(params, dtype=np.uint8)
        self.mem.params = self.params
        self.data_base = data_base
        self.kparam_cache.clear()
        self.mem.mmu = mmu
        self.mem.shared.fill(0)
        self.mem.local.fill(0)
        for arr in self.regs.values():
            arr.fill(0)
        for arr in self.pvars.values():
            arr.fill(0)
        if first_block != self.geom.first_block:
            self.geom.first_block = first_block
            for (name, _), arr in self._special_t.items():
                if name.startswith("%ctaid"):
                    self._special.pop(name, None)
                    arr[...] = self.special_value(name)

    def block_of(self, lanes: np.ndarray) -> np.ndarray:
        """The linear block index of each of the wave's ``lanes``."""
        return self.geom.first_block + lanes // self.geom.tpb

    def kparam(self, offset: int, dt: np.dtype, count: int) -> np.ndarray:
        """``count`` values of ``dt`` at ``offset`` of the launch's parameter buffer."""
        key = (offset, dt, count)
        vals = self.kparam_cache.get(key)
        if vals is None:
            vals = np.frombuffer(self.params.tobytes(), dtype=dt, count=count, offset=offset)
            self.kparam_cache[key] = vals
        return vals

    # -- operands -----------------------------------------------------------------------
    def rd(self, op, t: str):
        """A reader ``f(idx)`` returning operand ``op`` as PTX type ``t`` (array or scalar)."""
        if isinstance(op, Reg):
            return self._reg_reader(op.name, t)
        if isinstance(op, Imm):
            s = scalar(op.value, t)
            return lambda idx: s
        if isinstance(op, Not):
            inner = self.rd(op.operand, "pred")
            return lambda idx: ~inner(idx)
        if isinstance(op, Special):
            return self._special_reader(op.name, t)
        if isinstance(op, Sym):
            return self.symbol_reader(op.name, op.offset, t)
        raise TypeError(f"operand {op!r} cannot be read")

    def symbol_reader(self, name: str, offset: int, t: str):
        """Reader of a symbol's address plus ``offset`` as type ``t``; addresses of module
        globals follow the launch's data segment (read when executed)."""
        space, addr = self.symbols[name]
        if space == "global":
            dt = DTYPES[t]
            mask = (1 << 8 * dt.itemsize) - 1
            return lambda idx: dt.type((self.data_base + addr + offset) & mask)
        s = scalar(addr + offset, t)
        return lambda idx: s

    _NOT_FIXED = object()

    def fixed(self, op, t: str):
        """The value operand ``op`` reads as for all lanes if it never changes identity (a
        register view or an immediate), else ``Env._NOT_FIXED``."""
        if isinstance(op, Imm):
            return scalar(op.value, t)
        if isinstance(op, Reg):
            arr = self.regs[op.name]
            dt = DTYPES[t]
            if arr.dtype == dt or (arr.dtype.kind == "b" and t == "pred"):
                return arr
            if arr.dtype.itemsize == dt.itemsize and arr.dtype.kind != "b":
                return arr.view(dt)
        return self._NOT_FIXED

    def dst_view(self, op, t: str):
        """The array a plain write of type ``t`` to register ``op`` assigns into, or None."""
        if not isinstance(op, Reg):
            return None
        arr = self.regs[op.name]
        dt = DTYPES[t]
        if arr.dtype == dt or (arr.dtype.kind == "b" and t == "pred"):
            return arr
        if arr.dtype.itemsize == dt.itemsize and arr.dtype.kind != "b":
            return arr.view(dt)
        return None

    def wr(self, op, t: str):
        """A writer ``f(idx, value)`` storing a type-``t`` value into operand ``op``."""
        if isinstance(op, Sink) or op is None:
            return lambda idx, v: None
        arr = self.regs[op.name]
        dt = DTYPES[t]
        if arr.dtype.itemsize == dt.itemsize or arr.dtype.kind == "b" or t == "pred":
            view = arr if arr.dtype == dt or arr.dtype.kind == "b" else arr.view(dt)
            return _plain_writer(view)
        signed = dt.kind == "i"
        target = (SIGNED if signed else UNSIGNED)[arr.dtype.itemsize]
        view = arr.view(target)

        def write(idx, v):
            v = np.asarray(v)
            if v.dtype.kind == "f":
                v = v.view(UNSIGNED[v.dtype.itemsize])
            if idx is None:
                view[...] = v.astype(target)
            else:
                view[idx] = v.astype(target)
        return write

    def _reg_reader(self, name: str, t: str):
        arr = self.regs[name]
        dt = DTYPES[t]
        if arr.dtype.itemsize == dt.itemsize or arr.dtype.kind == "b" or t == "pred":
            view = arr if arr.dtype == dt or arr.dtype.kind == "b" else arr.view(dt)
            return lambda idx: view if idx is None else view[idx]
        if arr.dtype.itemsize > dt.itemsize:       # truncate a wide register
            src = arr.view(UNSIGNED[arr.dtype.itemsize])
            mid = UNSIGNED[dt.itemsize]
            return lambda idx: (src if idx is None else src[idx]).astype(mid).view(dt)
        signed = dt.kind == "i"                    # extend a narrow register
        src = arr.view((SIGNED if signed else UNSIGNED)[arr.dtype.itemsize])
        return lambda idx: (src if idx is None else src[idx]).astype(dt)


    # -- special registers ---------------------------------------------------------------
    def _special_reader(self, name: str, t: str):
        dt = DTYPES[t]
        # %clock* (a 1 GHz cycle counter) and %globaltimer (ns) read CLOCK_MONOTONIC, the
        # clock the compiled engine reads too (jit/bits.h): one launch may run on either
        if name in ("%clock", "%clock64", "%clock_hi") or name.startswith("%globaltimer"):
            shift = 32 if name.endswith("_hi") else 0
            return lambda idx: scalar(time.monotonic_ns() >> shift, t)
        if name in ("%envreg1", "%envreg2"):
            shift = 32 if name == "%envreg1" else 0
            return lambda idx: scalar((self.grid_ws >> shift) & 0xFFFFFFFF, t)
        val = self.special_value(name)
        if np.ndim(val) == 0:
            s = scalar(int(val), t)
            return lambda idx: s
        arr = self._special_t.get((name, t))
        if arr is None:
            arr = self._special_t[(name, t)] = np.asarray(val).astype(dt)
        return lambda idx: arr if idx is None else arr[idx]

    def special_value(self, name: str):
        """Value of a constant special register: a Python int or an array over the wave."""
        if name in self._special:
            return self._special[name]
        g = self.geom
        base, _, comp = name.partition(".")
        k = "xyz".index(comp) if comp else 0
        lin = self.lanes_all % g.tpb
        if base == "%tid":
            dims = g.block
            val = (lin // int(np.prod(dims[:k], dtype=np.int64))) % dims[k]
        elif base == "%ctaid":
            blk = self.lanes_all // g.tpb + g.first_block
            dims = g.grid
            val = (blk // int(np.prod(dims[:k], dtype=np.int64))) % dims[k]
        elif base == "%ntid":
            val = g.block[k]
        elif base == "%nctaid":
            val = g.grid[k]
        elif base == "%laneid":
            val = lin % 32
        elif base == "%warpid":
            val = lin // 32
        elif base == "%nwarpid":
            val = (g.tpb + 31) // 32
        elif base.startswith("%lanemask_"):
            val = _lanemask(base[10:], lin % 32)
        elif base in ("%smid", "%gridid") or base.startswith("%envreg"):
            # %envreg* other than the grid workspace's two (_special_reader) are 0, as the
            # driver leaves them
            val = 0
        elif base == "%nsmid":
            val = 1
        elif base in ("%dynamic_smem_size", "%total_smem_size", "%aggr_smem_size"):
            val = self.dyn_shared if base == "%dynamic_smem_size" else self.mem.shared_size
        elif base in ("%clusterid", "%nclusterid"):        # clusters of one CTA: its own
            val = self.special_value(name.replace("cluster", "cta"))
        elif base in ("%cluster_ctaid", "%cluster_ctarank", "%is_explicit_cluster"):
            val = 0
        elif base in ("%cluster_nctaid", "%cluster_nctarank"):
            val = 1
        else:
            raise KeyError(name)
        self._special[name] = val
        return val


def _plain_writer(view: np.ndarray):
    def write(idx, v):
        if idx is None:
            view[...] = v
        else:
            view[idx] = v
    return write


def _lanemask(kind: str, lane: np.ndarray) -> np.ndarray:
    one = np.uint64(1)
    bit = (one << lane.astype(np.uint64))
    below = bit - one
    masks = {"eq": bit, "lt": below, "le": below | bit,
             "gt": ~(below | bit), "ge": ~below}
    return (masks[kind] & np.uint64(0xFFFFFFFF)).astype(np.uint32)
