"""Warp-level operations: shfl.sync, vote.sync, activemask, bar.warp.sync, match.sync,
elect.sync.

A warp is 32 consecutive threads of a block in linear thread order (the last one may be
partial).  The member mask is taken to be the set of lanes executing the instruction.  A
shfl whose source lane is not executing it (diverged elsewhere, or exited) reads 0: CUDA
leaves that value undefined, and NVIDIA's reduction sample (reduce7's last warp, its default
kernel) counts on it adding nothing.
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
    ins.nargs(3 if "sync" in ins.flags else 2)
    d, a = ins.dst(0), ins.src(1)
    out_t = "b32" if mode == "ballot" else "pred"

    def bind(env):
        w, ra = env.wr(d, out_t), env.rd(a, "pred")
        lane_all, _, _, key_all, nwarps = warp_info(env)

        def run(idx):
            sel = slice(None) if idx is None else idx
            key = key_all[sel]
            p = np.broadcast_to(np.asarray(ra(idx)), key.shape)
            if mode == "ballot":
                bits = np.where(p, np.ldexp(1.0, lane_all[sel]), 0.0)
                res = np.bincount(key, weights=bits, minlength=nwarps)[key]
                w(idx, res.astype(np.uint64).astype(np.uint32))
                return
            n_true = np.bincount(key, weights=p.astype(np.float64), minlength=nwarps)[key]
            n_all = np.bincount(key, minlength=nwarps)[key]
            if mode == "all":
                w(idx, n_true == n_all)
            elif mode == "any":
                w(idx, n_true > 0)
            else:
                w(idx, (n_true == 0) | (n_true == n_all))
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
    """match.any.sync: mask of the warp's lanes holding the same value;
    match.all.sync: the mask of active lanes if all hold the same value (p set), else 0."""
    if not ins.flags & {"any", "all"}:
        raise ins.fail("match needs .any or .all")
    ins.nargs(3)
    t = ins.type()
    all_mode = "all" in ins.flags
    dst = ins.args[0]
    d, p = (dst.first, dst.second) if isinstance(dst, Pair) else (dst, Sink())
    a = ins.src(1)

    def bind(env):
        w, wp, ra = env.wr(d, "b32"), env.wr(p, "pred"), env.rd(a, t)
        lane_all, _, _, key_all, nwarps = warp_info(env)

        def run(idx):
            sel = slice(None) if idx is None else idx
            key, lane = key_all[sel], lane_all[sel]
            v = np.broadcast_to(np.asarray(ra(idx)), key.shape).astype(np.uint64)
            _, grp = np.unique(np.stack([key.astype(np.uint64), v]), axis=1,
                               return_inverse=True)
            grp = grp.ravel()
            bits = np.ldexp(1.0, lane)
            res = np.bincount(grp, weights=bits)[grp].astype(np.uint64).astype(np.uint32)
            if all_mode:
                active = np.bincount(key, weights=bits, minlength=nwarps)[key]
                ok = res == active.astype(np.uint64).astype(np.uint32)
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
    of ``a`` over the warp's member lanes (the executing ones), given to each of them."""
    kinds = [m for m in _REDUX if m in ins.flags]
    if "sync" not in ins.flags or len(kinds) != 1:
        raise ins.fail("redux needs .sync and one of .add/.min/.max/.and/.or/.xor")
    t = ins.type()
    if t not in ("u32", "s32", "b32") or (kinds[0] in ("and", "or", "xor")) != (t == "b32"):
        raise ins.fail(f"redux.{kinds[0]} of .{t}")
    ins.nargs(3)
    fn = _REDUX[kinds[0]]
    d, a = ins.dst(0), ins.src(1)
    dt = np.dtype(np.int32 if t == "s32" else np.uint32)
    wide = np.dtype(np.uint64 if kinds[0] == "add" else dt)   # add wraps modulo 2^32

    def bind(env):
        w, ra = env.wr(d, t), env.rd(a, t)
        _, _, _, key_all, nwarps = warp_info(env)

        def run(idx):
            key = key_all[slice(None) if idx is None else idx]
            v = np.broadcast_to(np.asarray(ra(idx)).astype(dt), key.shape).astype(wide)
            acc = np.zeros(nwarps, wide)
            first = np.unique(key, return_index=True)[1]
            acc[key[first]] = v[first]          # seed each warp with one of its own lanes
            rest = np.ones(key.shape, bool)
            rest[first] = False
            fn.at(acc, key[rest], v[rest])
            w(idx, acc[key].astype(dt))
        return run
    return bind


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
