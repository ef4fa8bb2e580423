"""Warp-level 8x8 matrix moves with the ISA's fragment layout (``mma.sync``'s 16-bit one:
lane l holds row l >> 2, columns 2*(l & 3) and 2*(l & 3) + 1, low half first):

* ``ldmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}{.shared{::cta}}.b16 r, [p]``: matrix j's
  row r is at the address lane 8j + r gives; each lane receives its two elements of each
  matrix (``.trans``: of the transposed matrix);
* ``stmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}{.shared{::cta}}.b16 [p], r`` (sm_90): the
  reverse;
* ``movmatrix.sync.aligned.m8n8.trans.b16 d, a``: the warp's matrix transposed.

Addresses are read from every lane of the warp (all 32 must execute these; in a partial
last warp a missing lane's part comes from the block's last lane); an address without a
state space is generic.  Elements are 16-bit accesses with the usual faults.
"""

from __future__ import annotations

import numpy as np

from .decode import Ins, op
from .ops_mem import addr_reader
from .syntax import Addr, Reg, Vec

_MODS = {"sync", "aligned", "m8n8", "x1", "x2", "x4", "trans", "shared", "shared::cta"}


def _regs(ins: Ins, operand, count: int) -> list:
    items = list(operand.items) if isinstance(operand, Vec) else [operand]
    if len(items) != count or not all(isinstance(r, Reg) for r in items):
        raise ins.fail(f"expected {count} registers")
    return items


def matrix_form(ins: Ins):
    """(registers, address operand, matrices, transposed, space) of ldmatrix/stmatrix."""
    ins.only(_MODS)
    nums = [m for m in ("x1", "x2", "x4") if m in ins.flags]
    if len(nums) != 1 or "m8n8" not in ins.flags or ins.type() != "b16":
        raise ins.fail(f"{ins.base} needs .m8n8, one of .x1/.x2/.x4 and .b16")
    ins.nargs(2)
    count = int(nums[0][1])
    load = ins.base == "ldmatrix"
    regs = _regs(ins, ins.args[0 if load else 1], count)
    a = ins.args[1 if load else 0]
    if not isinstance(a, Addr):
        raise ins.fail("expected a memory operand")
    space = "shared" if {"shared", "shared::cta"} & ins.flags else "generic"
    return regs, a, count, "trans" in ins.flags, space


def element_source(lane, j: int, k: int, trans: bool):
    """(row-giving lane within the warp, byte offset in that row) of element k of lane
    ``lane``'s register j."""
    g, t = lane >> 2, lane & 3
    if trans:
        return 8 * j + 2 * t + k, 2 * g
    return 8 * j + g, 4 * t + 2 * k


def _warp(env, idx):
    """(lanes, lane in warp, warp's first lane, block's last lane) of the executing lanes."""
    lanes = env.lanes_all if idx is None else idx
    tpb = env.geom.tpb
    lane = (lanes % tpb) % 32
    return lanes, lane, lanes - lane, lanes - lanes % tpb + tpb - 1


@op("ldmatrix", "stmatrix")
def dec_ldmatrix(ins: Ins):
    """Decoder of ``ldmatrix``/``stmatrix`` (see the module docstring)."""
    regs, a, count, trans, space = matrix_form(ins)
    load = ins.base == "ldmatrix"

    def bind(env):
        ra = addr_reader(env, a)
        io = [(env.wr if load else env.rd)(r, "b32") for r in regs]

        def run(idx):
            lanes, lane, start, last = _warp(env, idx)
            every = np.broadcast_to(np.asarray(ra(None), np.uint64), env.lanes_all.shape)
            va = np.empty((lanes.size, count, 2), np.uint64)
            for j in range(count):
                for k in range(2):
                    src, off = element_source(lane, j, k, trans)
                    row = np.minimum(start + src, last)    # (a partial warp)
                    va[:, j, k] = every[row] + np.asarray(off, np.uint64)
            owners = np.repeat(lanes, 2 * count)
            if load:
                half = env.mem.load(space, va.ravel(), owners, np.dtype(np.uint16), 1)
                words = half.reshape(lanes.size, count, 2).astype(np.uint32)
                for j, w in enumerate(io):
                    w(idx, words[:, j, 0] | (words[:, j, 1] << np.uint32(16)))
                return
            vals = np.stack([np.broadcast_to(np.asarray(r(idx), np.uint32), lanes.shape)
                             for r in io], axis=1)
            halves = np.stack([vals & np.uint32(0xFFFF), vals >> np.uint32(16)], axis=2)
            env.mem.store(space, va.ravel(), owners, halves.astype(np.uint16).reshape(-1, 1))
        return run
    return bind


@op("movmatrix")
def dec_movmatrix(ins: Ins):
    """Decoder of ``movmatrix.sync.aligned.m8n8.trans.b16 d, a``."""
    ins.only({"sync", "aligned", "m8n8", "trans"})
    if "trans" not in ins.flags or "m8n8" not in ins.flags or ins.type() != "b16":
        raise ins.fail("movmatrix needs .m8n8.trans.b16")
    ins.nargs(2)
    d, a = ins.dst(0), ins.src(1)

    def bind(env):
        w, ra = env.wr(d, "b32"), env.rd(a, "b32")

        def run(idx):
            lanes, lane, start, last = _warp(env, idx)
            every = np.broadcast_to(np.asarray(ra(None), np.uint32), env.lanes_all.shape)
            out = np.zeros(lanes.shape, np.uint32)
            g, t = lane >> 2, lane & 3
            for k in range(2):          # element k: M[2t + k][g] = lane 4(2t+k) + g/2's half g&1
                src = np.minimum(start + 4 * (2 * t + k) + (g >> 1), last)
                half = (every[src] >> (16 * (g & 1)).astype(np.uint32)) & np.uint32(0xFFFF)
                out |= half << np.uint32(16 * k)
            w(idx, out)
        return run
    return bind
