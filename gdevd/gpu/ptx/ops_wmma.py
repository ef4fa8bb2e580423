"""Warp matrix multiply-accumulate (tensor cores): ``wmma.load``, ``wmma.mma`` and
``wmma.store`` for ``.f16``, ``.bf16``, ``.tf32``, ``.s8``/``.u8`` and ``.f64`` inputs with
their ``.f16``/``.f32``/``.s32``/``.f64`` accumulators, shapes m16n16k16, m32n8k16,
m8n32k16, m16n16k8 (tf32) and m8n8k4 (f64), in the generic, ``.global`` or ``.shared``
state space.

The fragment layout and the arithmetic are :mod:`wmma_frag`'s.  Loads and stores translate
between memory layout (``.row``/``.col``, stride in elements, default the matrix's width or
height) and that layout, so ``mma`` only gathers each warp's matrices, multiplies and
scatters the result.  The instructions are warp-collective: all 32 lanes must execute them.
"""

from __future__ import annotations

import numpy as np

from .decode import Ins, op
from .ops_mem import addr_reader, space_of
from .syntax import Addr, Imm, Reg, Vec
from .wmma_frag import SHAPES, Frag, frag, multiply, pack, unpack, values

_ALLOWED = {"load", "store", "mma", "a", "b", "c", "d", "sync", "aligned", "row", "col",
            "global", "shared", "shared::cta", "satfinite", "rn", "tf32", *SHAPES}


def _shape(ins: Ins) -> str:
    found = [m for m in ins.mods if m in SHAPES]
    if len(found) != 1:
        raise ins.fail("unsupported wmma shape")
    return found[0]


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
    ins.only(_ALLOWED)
    if "load" in ins.flags:
        return _memory(ins, load=True)
    if "store" in ins.flags:
        return _memory(ins, load=False)
    if "mma" in ins.flags:
        return _mma(ins)
    raise ins.fail("unsupported wmma operation")


def _frag_of(ins: Ins, load: bool) -> Frag:
    kinds = [k for k in ("a", "b", "c", "d") if k in ins.flags]
    if len(kinds) != 1 or (kinds[0] == "d") == load:
        raise ins.fail("wmma.load needs one of .a/.b/.c, wmma.store needs .d")
    elem = "tf32" if "tf32" in ins.flags else ins.type()
    f = frag(kinds[0], _shape(ins), elem)
    if f is None:
        raise ins.fail(f"no .{elem} {kinds[0].upper()} fragments of shape {_shape(ins)}")
    return f


def _addresses(env, idx, ra, rs, layout: str, f: Frag):
    """Per lane and element: byte addresses of the fragment elements."""
    lanes, lane, _ = _lane_info(env, idx)
    elems = f.table[lane]                       # (n, E) row-major logical indices
    r, c = elems // f.cols, elems % f.cols
    stride = np.asarray(rs(idx)).astype(np.int64).reshape(-1, 1)
    off = (r * stride + c) if layout == "row" else (c * stride + r)
    base = np.asarray(ra(idx)).astype(np.uint64).reshape(-1, 1)
    return lanes, base + (off * f.mem_dt.itemsize).astype(np.uint64)


def _memory(ins: Ins, load: bool):
    f = _frag_of(ins, load)
    layout = "col" if "col" in ins.flags else "row"
    ins.nargs(2, 3)
    regs = _regs(ins, ins.args[0 if load else 1], f.nregs)
    addr = ins.args[1 if load else 0]
    if not isinstance(addr, Addr):
        raise ins.fail("expected a memory operand")
    stride_op = ins.src(2) if len(ins.args) == 3 else \
        Imm(f.cols if layout == "row" else f.rows)
    space = "shared" if "shared::cta" in ins.flags else space_of(ins)

    def bind(env):
        ra, rs = addr_reader(env, addr), env.rd(stride_op, "u32")
        io = [(env.wr if load else env.rd)(r, f.reg_t) for r in regs]

        def run(idx):
            lanes, va = _addresses(env, idx, ra, rs, layout, f)
            n, e = va.shape
            if load:
                vals = env.mem.load(space, va.ravel(), np.repeat(lanes, e), f.mem_dt, 1)
                bits = pack(vals.reshape(n, e), f)
                for k, w in enumerate(io):
                    w(idx, bits[:, k])
            else:
                vals = unpack([r(idx) for r in io], f, n).reshape(n * e, 1)
                env.mem.store(space, va.ravel(), np.repeat(lanes, e), vals)
        return run
    return bind


def _mma_types(ins: Ins) -> tuple[str, str, str]:
    """(A/B element type, C type, D type) of a ``wmma.mma``."""
    t = ins.types
    if "tf32" in ins.flags and t == ["f32", "f32"]:
        return "tf32", "f32", "f32"
    if len(t) == 2 and all(x in ("f16", "f32") for x in t):
        return "f16", t[1], t[0]
    if len(t) == 4 and t[1] == t[2]:
        return t[1], t[3], t[0]
    raise ins.fail("unsupported wmma.mma types")


def _mma(ins: Ins):
    ab, tc, td = _mma_types(ins)
    shape = _shape(ins)
    fa, fb, fc, fd = (frag(k, shape, e) for k, e in (("a", ab), ("b", ab), ("c", tc),
                                                     ("d", td)))
    if fa is None or fb is None or fc is None or fd is None or \
            (ab in ("s8", "u8")) != (td == "s32") or tc != td and ab != "f16":
        raise ins.fail(f"no wmma.mma .{td}.{ab}.{tc} of shape {shape}")
    if ("rn" in ins.flags) != (ab == "f64"):
        raise ins.fail(".rn goes with (and only with) .f64 wmma.mma")
    ins.nargs(4)
    regs = [_regs(ins, ins.args[k], f.nregs) for k, f in enumerate((fd, fa, fb, fc))]
    return mma_binder(regs, (fa, fb, fc, fd), ab, td, "satfinite" in ins.flags)


def mma_binder(regs: list, frags: tuple, ab: str, td: str, sat: bool):
    """The binder of D = A x B + C per warp for ``wmma.mma`` and ``mma.sync``: ``regs`` the
    register lists of D, A, B, C; ``frags`` the fragments of A, B, C, D (their tables say
    where each lane's elements sit); arithmetic as :func:`wmma_frag.multiply`."""
    fa, fb, fc, fd = frags

    def gather(bits, f: Frag, key, lane, nwarps):
        vals = values(unpack(bits, f, key.size), f.elem)
        mat = np.zeros((nwarps, f.rows * f.cols), vals.dtype)
        mat[key[:, None], f.table[lane]] = vals[:, :f.per_lane]
        return mat.reshape(nwarps, f.rows, f.cols)

    def bind(env):
        wd = [env.wr(r, fd.reg_t) for r in regs[0]]
        rabc = [[env.rd(r, f.reg_t) for r in rs] for rs, f in zip(regs[1:], (fa, fb, fc),
                                                                  strict=True)]

        def run(idx):
            lanes, lane, start = _lane_info(env, idx)
            _, key = np.unique(start, return_inverse=True)
            key = key.ravel()
            nw = int(key.max()) + 1 if key.size else 0
            am, bm, cm = (gather([r(idx) for r in rs], f, key, lane, nw)
                          for rs, f in zip(rabc, (fa, fb, fc), strict=True))
            dm = multiply(am, bm, cm, ab, td, sat).reshape(nw, -1)
            bits = pack(dm[key[:, None], fd.table[lane]], fd)
            for k, w in enumerate(wd):
                w(idx, bits[:, k])
        return run
    return bind
