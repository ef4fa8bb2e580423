"""Atomics: atom and red (add, min, max, exch, cas, and, or, xor, inc, dec) on global,
shared and generic addresses, 32- and 64-bit integers and f32/f64 add.

Each instruction's lanes are applied one after another in lane order, so the result is that
of some serialization, as the PTX memory model requires of atomics.
"""

from __future__ import annotations

import numpy as np

from gdevd.gpu import mmu as fa

from .decode import Ins, op
from .ops_mem import _IGNORED, SPACES, addr_reader, space_of
from .ptxtypes import DTYPES
from .syntax import Addr

_OPS = {"add": fa.ATOM_ADD, "min": fa.ATOM_MIN, "max": fa.ATOM_MAX, "exch": fa.ATOM_EXCH,
        "cas": fa.ATOM_CAS, "and": fa.ATOM_AND, "or": fa.ATOM_OR, "xor": fa.ATOM_XOR,
        "inc": fa.ATOM_INC, "dec": fa.ATOM_DEC}
_TYPES = {"u32": fa.T_U32, "b32": fa.T_U32, "s32": fa.T_S32, "u64": fa.T_U64,
          "b64": fa.T_U64, "s64": fa.T_S64, "f32": fa.T_F32, "f64": fa.T_F64}
_TYPE_NAME = {fa.T_U32: "u32", fa.T_S32: "s32", fa.T_U64: "u64", fa.T_S64: "s64",
              fa.T_F32: "f32", fa.T_F64: "f64"}


def _decode_common(ins: Ins):
    ops = [m for m in ins.mods if m in _OPS]
    if len(ops) != 1:
        raise ins.fail("expected one atomic operation")
    opname = ops[0]
    t = ins.type()
    if t not in _TYPES:
        raise ins.fail(f"atomic on .{t} is not supported")
    typ = _TYPES[t]
    if typ in (fa.T_F32, fa.T_F64) and opname not in ("add", "exch"):
        raise ins.fail(f"atomic {opname} on floats is not supported")
    ins.only(_IGNORED | set(SPACES) | set(_OPS) | {"noftz"} | {"acq_rel"})
    space = space_of(ins)
    if space not in ("global", "shared", "generic"):
        raise ins.fail(f"atomics in .{space} are not supported")
    return _OPS[opname], typ, space


@op("atom")
def dec_atom(ins: Ins):
    """Decoder of ``atom`` (see the module docstring)."""
    code, typ, space = _decode_common(ins)
    ins.nargs(4 if code == fa.ATOM_CAS else 3)
    d = ins.dst(0)
    a = ins.args[1]
    if not isinstance(a, Addr):
        raise ins.fail("expected a memory operand [..]")
    srcs = [ins.src(k) for k in range(2, len(ins.args))]
    return _binder(d, a, srcs, code, typ, space)


@op("red")
def dec_red(ins: Ins):
    """Decoder of ``red`` (see the module docstring)."""
    code, typ, space = _decode_common(ins)
    if code == fa.ATOM_CAS or code == fa.ATOM_EXCH:
        raise ins.fail("red has no cas/exch")
    ins.nargs(2)
    a = ins.args[0]
    if not isinstance(a, Addr):
        raise ins.fail("expected a memory operand [..]")
    return _binder(None, a, [ins.src(1)], code, typ, space)


def _binder(d, a, srcs, code, typ, space):
    tname = _TYPE_NAME[typ]
    dt = DTYPES[tname]

    def bind(env):
        w = env.wr(d, tname)
        ra = addr_reader(env, a)
        rs = [env.rd(s, tname) for s in srcs]
        mem, lanes_all = env.mem, env.lanes_all

        def run(idx):
            lanes = lanes_all if idx is None else idx
            va = np.broadcast_to(ra(idx), lanes.shape)
            vals = [np.broadcast_to(np.asarray(r(idx), dtype=dt), lanes.shape) for r in rs]
            old = mem.atomic(space, va, lanes, code, typ, dt, *vals)
            w(idx, old)
        return run
    return bind
