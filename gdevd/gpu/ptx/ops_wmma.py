"""Warp matrix multiply-accumulate (tensor cores): wmma.load, wmma.mma, wmma.store for
.f16 inputs with .f16/.f32 accumulators, shapes m16n16k16, m32n8k16 and m8n32k16.

Fragments are opaque in PTX, so the engine picks its own layout: a lane holds consecutive
elements of the fragment's matrix in row-major *logical* order (lane l of an A fragment
holds elements l*16 .. l*16+15 of the M x K matrix, modulo its size; accumulators hold 8
elements per lane).  Loads and stores translate between memory layout (row/col, stride)
and that order, so ``mma`` only gathers each warp's matrices, multiplies in float32 and
scatters the result.  The instructions are warp-collective: all 32 lanes must execute them.
"""

from __future__ import annotations

import numpy as np

from .decode import Ins, op
from .ops_mem import addr_reader, space_of
from .syntax import Addr, Imm, Reg, Vec

SHAPES = {"m16n16k16": (16, 16, 16), "m32n8k16": (32, 8, 16), "m8n32k16": (8, 32, 16)}


def _shape(ins: Ins):
    found = [m for m in ins.mods if m in SHAPES]
    if len(found) != 1:
        raise ins.fail("unsupported wmma shape")
    return SHAPES[found[0]]


def frag_layout(kind: str, shape, acc_type: str = "f32"):
    """(rows, cols, elements per lane, index table (32, E) into the row-major matrix)."""
    m, n, k = shape
    rows, cols = {"a": (m, k), "b": (k, n), "c": (m, n), "d": (m, n)}[kind]
    per_lane = 16 if kind in ("a", "b") else 8
    table = (np.arange(32)[:, None] * per_lane + np.arange(per_lane)) % (rows * cols)
    return rows, cols, per_lane, table


def _regs(ins: Ins, operand, count: int) -> list:
    if not isinstance(operand, Vec) or len(operand.items) != count or \
            not all(isinstance(r, Reg) for r in operand.items):
        raise ins.fail(f"expected a vector of {count} registers")
    return list(operand.items)


def _lane_info(env, idx):
    lanes = env.lanes_all if idx is None else idx
    lin = lanes % env.geom.tpb
    return lanes, lin % 32, lanes - lin % 32


@op("wmma")
def dec_wmma(ins: Ins):
    """Decoder of ``wmma`` (see the module docstring)."""
    if "load" in ins.flags:
        return _load(ins)
    if "store" in ins.flags:
        return _store(ins)
    if "mma" in ins.flags:
        return _mma(ins)
    raise ins.fail("unsupported wmma operation")


def _frag_kind(ins: Ins) -> str:
    kinds = [k for k in ("a", "b", "c", "d") if k in ins.flags]
    if len(kinds) != 1:
        raise ins.fail("wmma.load/store needs one of .a/.b/.c (.d for store)")
    return kinds[0]


def _mem_args(ins: Ins, kind: str):
    t = ins.type()
    if t not in ("f16", "f32"):
        raise ins.fail("only .f16/.f32 wmma fragments are supported")
    if kind in ("a", "b") and t != "f16":
        raise ins.fail("A/B fragments must be .f16")
    layout = "col" if "col" in ins.flags else "row"
    rows, cols, per_lane, table = frag_layout(kind, _shape(ins))
    nregs = per_lane // 2 if t == "f16" else per_lane
    return t, layout, rows, cols, per_lane, table, nregs


def _addresses(env, idx, ra, rs, layout, rows, cols, table, esize):
    """Per lane and element: byte addresses of the fragment elements."""
    lanes, lane, _ = _lane_info(env, idx)
    elems = table[lane]                         # (n, E) row-major logical indices
    r, c = elems // cols, elems % cols
    stride = np.asarray(rs(idx)).astype(np.int64).reshape(-1, 1)
    off = (r * stride + c) if layout == "row" else (c * stride + r)
    base = np.asarray(ra(idx)).astype(np.uint64).reshape(-1, 1)
    return lanes, base + (off * esize).astype(np.uint64)


def _default_stride(kind: str, layout: str, rows: int, cols: int) -> int:
    return cols if layout == "row" else rows


def _load(ins: Ins):
    kind = _frag_kind(ins)
    t, layout, rows, cols, per_lane, table, nregs = _mem_args(ins, kind)
    ins.nargs(2, 3)
    dests = _regs(ins, ins.args[0], nregs)
    addr = ins.args[1]
    if not isinstance(addr, Addr):
        raise ins.fail("expected a memory operand")
    stride_op = ins.src(2) if len(ins.args) == 3 else \
        Imm(_default_stride(kind, layout, rows, cols))
    space = space_of(ins)
    space = "global" if space == "const" else space
    dt = np.dtype(np.float16 if t == "f16" else np.float32)

    def bind(env):
        ra, rs = addr_reader(env, addr), env.rd(stride_op, "u32")
        ws = [env.wr(d, "b32" if t == "f16" else "f32") for d in dests]

        def run(idx):
            lanes, va = _addresses(env, idx, ra, rs, layout, rows, cols, table, dt.itemsize)
            n, e = va.shape
            vals = env.mem.load(space, va.ravel(), np.repeat(lanes, e), dt, 1).reshape(n, e)
            if t == "f16":
                vals = np.ascontiguousarray(vals).view(np.uint32)   # pairs of halves
            for k, w in enumerate(ws):
                w(idx, vals[:, k])
        return run
    return bind


def _store(ins: Ins):
    if "d" not in ins.flags:
        raise ins.fail("wmma.store needs .d")
    t, layout, rows, cols, per_lane, table, nregs = _mem_args(ins, "d")
    ins.nargs(2, 3)
    addr = ins.args[0]
    if not isinstance(addr, Addr):
        raise ins.fail("expected a memory operand")
    srcs = _regs(ins, ins.args[1], nregs)
    stride_op = ins.src(2) if len(ins.args) == 3 else Imm(cols if layout == "row" else rows)
    space = space_of(ins)
    dt = np.dtype(np.float16 if t == "f16" else np.float32)

    def bind(env):
        ra, rs = addr_reader(env, addr), env.rd(stride_op, "u32")
        rd = [env.rd(s, "b32" if t == "f16" else "f32") for s in srcs]

        def run(idx):
            lanes, va = _addresses(env, idx, ra, rs, layout, rows, cols, table, dt.itemsize)
            n, e = va.shape
            regs = np.stack([np.broadcast_to(np.asarray(r(idx)), (n,)) for r in rd], axis=1)
            vals = np.ascontiguousarray(regs).view(dt).reshape(n * e, 1)
            env.mem.store(space, va.ravel(), np.repeat(lanes, e), vals)
        return run
    return bind


def _mma(ins: Ins):
    if len(ins.types) != 2 or any(x not in ("f16", "f32") for x in ins.types):
        raise ins.fail("wmma.mma supports .f16/.f32 accumulators")
    dtype_d, dtype_c = ins.types
    shape = _shape(ins)
    ins.nargs(4)
    nd = 4 if dtype_d == "f16" else 8
    nc = 4 if dtype_c == "f16" else 8
    d = _regs(ins, ins.args[0], nd)
    a, b = _regs(ins, ins.args[1], 8), _regs(ins, ins.args[2], 8)
    c = _regs(ins, ins.args[3], nc)
    la, lb, lc = frag_layout("a", shape), frag_layout("b", shape), frag_layout("c", shape)

    def gather(regs, layout, kind_dt, key, lane, nwarps):
        rows, cols, per_lane, table = layout
        vals = np.stack([np.asarray(r) for r in regs], axis=1)
        vals = np.ascontiguousarray(vals).view(kind_dt).astype(np.float32)
        mat = np.zeros((nwarps, rows * cols), np.float32)
        mat[key[:, None], table[lane]] = vals[:, :per_lane]
        return mat.reshape(nwarps, rows, cols)

    def bind(env):
        ra = [env.rd(r, "b32") for r in a]
        rb = [env.rd(r, "b32") for r in b]
        rc = [env.rd(r, "b32" if dtype_c == "f16" else "f32") for r in c]
        wd = [env.wr(r, "b32" if dtype_d == "f16" else "f32") for r in d]

        def run(idx):
            lanes, lane, start = _lane_info(env, idx)
            _, key = np.unique(start, return_inverse=True)
            key = key.ravel()
            nw = int(key.max()) + 1 if key.size else 0
            am = gather([r(idx) for r in ra], la, np.float16, key, lane, nw)
            bm = gather([r(idx) for r in rb], lb, np.float16, key, lane, nw)
            cm = gather([r(idx) for r in rc], lc, np.float16 if dtype_c == "f16"
                        else np.float32, key, lane, nw)
            dm = (np.matmul(am, bm) + cm).reshape(nw, -1)
            out = dm[key[:, None], lc[3][lane]]
            if dtype_d == "f16":
                out = np.ascontiguousarray(out.astype(np.float16)).view(np.uint32)
            for k, w in enumerate(wd):
                w(idx, out[:, k])
        return run
    return bind
