"""Warp-level operations: shfl.sync, vote.sync, activemask, bar.warp.sync, match.sync,
elect.sync.

A warp is 32 consecutive threads of a block in linear thread order (the last one may be
partial).  vote, match and redux combine, for each executing lane, the lanes of its member
mask that execute the instruction (:func:`members`): lanes of one warp may pass different
masks, as cooperative groups' ``labeled_partition`` does (one mask per label, from
``match.any``), and each lane then gets its own group's result; ``vote`` without ``.sync``
takes every executing lane.  shfl moves values whatever its mask.  A shfl whose source lane
is not executing it (diverged elsewhere, or exited) reads 0: CUDA leaves that value
undefined, and NVIDIA's reduction sample (reduce7's last warp, its default kernel) counts on
it adding nothing.
"""

from __future__ import annotations

import numpy as np

from .decode import Ins, op
from .syntax import Pair, Sink


def warp_info(env):
    """Per wave: (lane id, index of the warp's first thread, threads in the warp, warp key)."""
    cached = getattr(env, "_warp_info", None)
    if cached is None:
        g = env.geom
        t = env.lanes_all
        lin = t % g.tpb
        lane = lin % 32
        start = t - lane
        size = np.minimum(32, g.tpb - (lin - lane))
        key = (t // g.tpb) * ((g.tpb + 31) // 32) + lin // 32
        cached = (lane, start, size, key, int(key[-1]) + 1 if t.size else 0)
        env._warp_info = cached
    return cached


def members(idx, key, lane, nwarps: int, mask_reader) -> np.ndarray:
    """Per executing lane (of ``idx``): its group as a lane bit mask, the lanes of its warp
    that execute the instruction and are in its member mask (``mask_reader``, None: all)."""
    bits = np.ldexp(1.0, lane)
    active = np.bincount(key, weights=bits, minlength=nwarps)[key].astype(np.uint64)
    active = active.astype(np.uint32)
    if mask_reader is None:
        return active
    return active & np.broadcast_to(np.asarray(mask_reader(idx)), key.shape).astype(np.uint32)


def _bitmatrix(sel: np.ndarray) -> np.ndarray:
    """(lanes, 32) booleans: bit j of each lane's ``sel``."""
    return ((sel[:, None] >> np.arange(32, dtype=np.uint32)) & 1).astype(bool)


def _by_lane(key, lane, v, nwarps: int) -> np.ndarray:
    """(lanes, 32): the values ``v`` of the executing lanes of each lane's warp, by lane id
    (0 where a lane does not execute)."""
    table = np.zeros((nwarps, 32), v.dtype)
    table[key, lane] = v
    return table[key]


@op("shfl")
def dec_shfl(ins: Ins):
    """Decoder of ``shfl`` (see the module docstring)."""
    modes = [m for m in ("up", "down", "bfly", "idx") if m in ins.flags]
    if len(modes) != 1:
        raise ins.fail("shfl needs one of .up/.down/.bfly/.idx")
    mode = modes[0]
    ins.nargs(5 if "sync" in ins.flags else 4)
    dst = ins.args[0]
    d, p = (dst.first, dst.second) if isinstance(dst, Pair) else (dst, Sink())
    a, b, c = ins.src(1), ins.src(2), ins.src(3)

    def bind(env):
        wd, wp = env.wr(d, "b32"), env.wr(p, "pred")
        ra, rb, rc = env.rd(a, "b32"), env.rd(b, "u32"), env.rd(c, "u32")
        lane_all, start_all, size_all, _, _ = warp_info(env)

        def run(idx):
            sel = slice(None) if idx is None else idx
            lane = lane_all[sel].astype(np.int64)
            bval = np.asarray(rb(idx)).astype(np.int64) & 31
            cval = np.asarray(rc(idx)).astype(np.int64)
            seg = (cval >> 8) & 31
            clamp = cval & 31
            max_lane = (lane & seg) | (clamp & ~seg)
            min_lane = lane & seg
            if mode == "up":
                j = lane - bval
                ok = j >= max_lane
            elif mode == "down":
                j = lane + bval
                ok = j <= max_lane
            elif mode == "bfly":
                j = lane ^ bval
                ok = j <= max_lane
            else:
                j = min_lane | (bval & ~seg)
                ok = j <= max_lane
            ok = ok & (j < size_all[sel]) & (j >= 0)
            j = np.where(ok, j, lane)
            src = np.asarray(ra(None))
            if src.ndim:
                at = start_all[sel] + j
                vals = src[at]
                if idx is not None:             # lanes not executing this shfl read 0
                    live = np.zeros(src.shape[0], bool)
                    live[idx] = True
                    vals = np.where(live[at], vals, vals.dtype.type(0))
            else:
                vals = np.broadcast_to(src, j.shape)
            wd(idx, vals)
            wp(idx, ok)
        return run
    return bind


@op("vote")
def dec_vote(ins: Ins):
    """Decoder of ``vote`` (see the module docstring)."""
    modes = [m for m in ("all", "any", "uni", "ballot") if m in ins.flags]
    if len(modes) != 1:
        raise ins.fail("vote needs one of .all/.any/.uni/.ballot")
    mode = modes[0]
    sync = "sync" in ins.flags
    ins.nargs(3 if sync else 2)
    d, a = ins.dst(0), ins.src(1)
    mask = ins.src(2) if sync else None
    out_t = "b32" if mode == "ballot" else "pred"

    def bind(env):
        w, ra = env.wr(d, out_t), env.rd(a, "pred")
        rm = env.rd(mask, "b32") if mask is not None else None
        lane_all, _, _, key_all, nwarps = warp_info(env)

        def run(idx):
            sel = slice(None) if idx is None else idx
            key, lane = key_all[sel], lane_all[sel]
            group = members(idx, key, lane, nwarps, rm)
            p = np.broadcast_to(np.asarray(ra(idx)), key.shape)
            bits = np.where(p, np.ldexp(1.0, lane), 0.0)
            yes = np.bincount(key, weights=bits, minlength=nwarps)[key].astype(np.uint64)
            yes = yes.astype(np.uint32) & group
            if mode == "ballot":
                w(idx, yes)
            elif mode == "all":
                w(idx, yes == group)
            elif mode == "any":
                w(idx, yes != 0)
            else:
                w(idx, (yes == 0) | (yes == group))
        return run
    return bind


@op("activemask")
def dec_activemask(ins: Ins):
    """Decoder of ``activemask`` (see the module docstring)."""
    ins.nargs(1)
    d = ins.dst(0)

    def bind(env):
        w = env.wr(d, "b32")
        lane_all, _, _, key_all, nwarps = warp_info(env)

        def run(idx):
            sel = slice(None) if idx is None else idx
            key = key_all[sel]
            bits = np.ldexp(1.0, lane_all[sel])
            res = np.bincount(key, weights=bits, minlength=nwarps)[key]
            w(idx, res.astype(np.uint64).astype(np.uint32))
        return run
    return bind


@op("match")
def dec_match(ins: Ins):
    """match.any.sync: mask of the lanes of each lane's group (:func:`members`) holding its
    value; match.all.sync: the group if all of it holds the same value (p set), else 0."""
    if not ins.flags & {"any", "all"}:
        raise ins.fail("match needs .any or .all")
    ins.nargs(3)
    t = ins.type()
    all_mode = "all" in ins.flags
    dst = ins.args[0]
    d, p = (dst.first, dst.second) if isinstance(dst, Pair) else (dst, Sink())
    a, mask = ins.src(1), ins.src(2)

    def bind(env):
        w, wp, ra = env.wr(d, "b32"), env.wr(p, "pred"), env.rd(a, t)
        rm = env.rd(mask, "b32")
        lane_all, _, _, key_all, nwarps = warp_info(env)

        def run(idx):
            sel = slice(None) if idx is None else idx
            key, lane = key_all[sel], lane_all[sel]
            group = members(idx, key, lane, nwarps, rm)
            v = np.broadcast_to(np.asarray(ra(idx)), key.shape).astype(np.uint64)
            same = (_by_lane(key, lane, v, nwarps) == v[:, None]) & _bitmatrix(group)
            res = (same.astype(np.uint64) << np.arange(32, dtype=np.uint64)).sum(1)
            res = res.astype(np.uint32)
            if all_mode:
                ok = res == group
                w(idx, np.where(ok, res, np.uint32(0)))
                wp(idx, ok)
                return
            w(idx, res)
        return run
    return bind


@op("barred")
def dec_barred(ins: Ins):
    """The reduction half of bar.red.{popc,and,or}, run by a block's threads right after
    they all passed the barrier half: popc counts, and/or combine the predicate."""
    kinds = [m for m in ("popc", "and", "or") if m in ins.flags]
    if len(kinds) != 1:
        raise ins.fail("bar.red needs .popc, .and or .or")
    kind = kinds[0]
    ins.nargs(3, 4)
    d, c = ins.dst(0), ins.args[-1]

    def bind(env):
        out_t = "u32" if kind == "popc" else "pred"
        w, rc = env.wr(d, out_t), env.rd(c, "pred")
        tpb, nblocks = env.geom.tpb, env.geom.nblocks

        def run(idx):
            lanes = env.lanes_all if idx is None else idx
            blk = lanes // tpb
            p = np.broadcast_to(np.asarray(rc(idx)), lanes.shape)
            n_true = np.bincount(blk, weights=p.astype(np.float64), minlength=nblocks)[blk]
            if kind == "popc":
                w(idx, n_true.astype(np.uint32))
                return
            n_all = np.bincount(blk, minlength=nblocks)[blk]
            w(idx, n_true == n_all if kind == "and" else n_true > 0)
        return run
    return bind


_REDUX = {"add": np.add, "min": np.minimum, "max": np.maximum, "and": np.bitwise_and,
          "or": np.bitwise_or, "xor": np.bitwise_xor}


@op("redux")
def dec_redux(ins: Ins):
    """redux.sync.{add,min,max}.{u32,s32} / .{and,or,xor}.b32 d, a, mask: the reduction
    of ``a`` over each lane's group (:func:`members`), given to each of them."""
    kinds = [m for m in _REDUX if m in ins.flags]
    if "sync" not in ins.flags or len(kinds) != 1:
        raise ins.fail("redux needs .sync and one of .add/.min/.max/.and/.or/.xor")
    t = ins.type()
    if t not in ("u32", "s32", "b32") or (kinds[0] in ("and", "or", "xor")) != (t == "b32"):
        raise ins.fail(f"redux.{kinds[0]} of .{t}")
    ins.nargs(3)
    fn = _REDUX[kinds[0]]
    d, a, mask = ins.dst(0), ins.src(1), ins.src(2)
    dt = np.dtype(np.int32 if t == "s32" else np.uint32)
    wide = np.dtype(np.uint64 if kinds[0] == "add" else dt)   # add wraps modulo 2^32
    unit = _identity(kinds[0], dt)

    def bind(env):
        w, ra, rm = env.wr(d, t), env.rd(a, t), env.rd(mask, "b32")
        lane_all, _, _, key_all, nwarps = warp_info(env)

        def run(idx):
            sel = slice(None) if idx is None else idx
            key, lane = key_all[sel], lane_all[sel]
            group = _bitmatrix(members(idx, key, lane, nwarps, rm))
            v = np.broadcast_to(np.asarray(ra(idx)).astype(dt), key.shape).astype(wide)
            vals = np.where(group, _by_lane(key, lane, v, nwarps), wide.type(unit))
            w(idx, fn.reduce(vals, axis=1).astype(dt))
        return run
    return bind


def _identity(kind: str, dt: np.dtype) -> int:
    """The value ``kind`` leaves unchanged (an empty group's result)."""
    info = np.iinfo(dt)
    return {"min": info.max, "max": info.min, "and": info.max}.get(kind, 0)


@op("elect")
def dec_elect(ins: Ins):
    """Decoder of ``elect.sync d|p, membermask``: per warp, the lowest executing lane whose
    bit is in its member mask leads (``p`` true for it alone; ``d`` its lane id, 0 when no
    lane qualifies)."""
    ins.only({"sync"})
    ins.nargs(2)
    dst = ins.args[0]
    d, p = (dst.first, dst.second) if isinstance(dst, Pair) else (dst, Sink())
    mask = ins.src(1)

    def bind(env):
        wd, wp, rm = env.wr(d, "u32"), env.wr(p, "pred"), env.rd(mask, "b32")
        lane_all, _, _, key_all, nwarps = warp_info(env)

        def run(idx):
            sel = slice(None) if idx is None else idx
            key, lane = key_all[sel], lane_all[sel]
            m = np.broadcast_to(np.asarray(rm(idx), np.uint32), key.shape)
            inside = ((m >> lane.astype(np.uint32)) & np.uint32(1)) != 0
            leader = np.full(nwarps, 32, np.int64)
            np.minimum.at(leader, key[inside], lane[inside])
            lead = leader[key]
            wd(idx, np.where(lead < 32, lead, 0).astype(np.uint32))
            wp(idx, lane == lead)
        return run
    return bind
