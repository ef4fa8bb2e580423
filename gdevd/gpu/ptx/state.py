"""Per-wave machine state: register file, per-thread param storage, special registers.

Each PTX register is one numpy array over the wave's threads, of its declared type; an
instruction of another type of the same width reads and writes a ``.view`` of it (bound
once, when the wave's closures are built).  Readers and writers take ``idx``: ``None`` for
all threads of the wave, else an int array of lane indices.
"""

from __future__ import annotations

import time

import numpy as np

from .memory import MemSys
from .ptxtypes import DTYPES, SIGNED, UNSIGNED, dtype_of, scalar
from .syntax import Imm, Not, Reg, Sink, Special, Sym

_START_NS = time.perf_counter_ns()
_START_MONO = time.monotonic_ns()


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
                 symbols: dict[str, tuple[str, int]], clock, dyn_shared: int = 0) -> None:
        self.kernel = kernel
        self.geom = geom
        self.n = geom.n
        self.mem = mem
        self.params = np.frombuffer(params, dtype=np.uint8)
        self.symbols = symbols          # name -> (space, address in that space)
        self.clock = clock              # callable -> current dynamic instruction count
        self.dyn_shared = dyn_shared
        self.regs = {name: np.zeros(self.n, dtype=dtype_of(t))
                     for name, t in kernel.regs.items()}
        self.pvars = {name: np.zeros((self.n, max(size, 1)), dtype=np.uint8)
                      for name, size in kernel.pvars.items()}
        self.lanes_all = np.arange(self.n, dtype=np.int64)
        self._special: dict[str, object] = {}

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
            s = scalar(self.symbol_address(op.name) + op.offset, t)
            return lambda idx: s
        raise TypeError(f"operand {op!r} cannot be read")

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

    def symbol_address(self, name: str) -> int:
        """The address of a variable in its own state space (global VA, shared offset...)."""
        return self.symbols[name][1]

    # -- special registers ---------------------------------------------------------------
    def _special_reader(self, name: str, t: str):
        dt = DTYPES[t]
        if name in ("%clock", "%clock64", "%clock_hi"):   # a 1 GHz cycle counter
            shift = 32 if name == "%clock_hi" else 0
            return lambda idx: scalar((time.perf_counter_ns() - _START_NS) >> shift, t)
        if name.startswith("%globaltimer"):
            shift = 32 if name.endswith("_hi") else 0
            return lambda idx: scalar((time.monotonic_ns() - _START_MONO) >> shift, t)
        val = self.special_value(name)
        if np.ndim(val) == 0:
            s = scalar(int(val), t)
            return lambda idx: s
        arr = np.asarray(val).astype(dt)
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
        elif base in ("%smid", "%gridid"):
            val = 0
        elif base == "%nsmid":
            val = 1
        elif base in ("%dynamic_smem_size", "%total_smem_size"):
            val = self.mem.shared_size if base == "%total_smem_size" else self.dyn_shared
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
