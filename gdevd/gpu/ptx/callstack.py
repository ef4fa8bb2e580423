"""Per-thread call stacks of a wave: the interpreter's side of real calls (calls.py).

Theory of operation
-------------------
Every thread of a wave has a stack pointer ``sp`` (0 in the kernel's own code, the depth
of its current activation inside a recursive function).  ``call.frame`` for the threads
``L`` executing it saves, at row ``sp[L]`` of per-register stacks, the values of every
register and ``.param`` variable of the frame region (calls.py) and the return block
``pc + 1``; copies the call's argument variables into the callee's formal parameters;
increments ``sp[L]``; points ``~fp`` at the new activation's frame; and moves the threads
to the callee's entry.  ``ret.frame`` for the threads returning does the opposite: it
reads the callee's return values, restores what the call saved, writes the values into the
argument variables of each thread's own call site and moves each thread to its own return
block.  Threads of one basic block may be at different depths and return to different
sites: everything is indexed per lane, so divergence is exact.  The stacks are wave state,
so ``run(budget)`` stops and resumes anywhere in a recursion.

A thread's local window holds its static ``.local`` variables at ``[0, local_size)`` and
its frames above ``base`` (the static part rounded up to 16): the frame of the activation
at depth ``d`` (1-based) starts at ``base + (d - 1) * frame``.  In the wave's buffer the
frames are laid out depth-major after the static part, so the stack grows by appending.

Bounds.  A thread's stack holds ``STACK_BYTES``; an activation takes its ``.local`` frame
plus 16 bytes (a return address and saved state, roughly as on hardware), which bounds the
depth.  A launch reserves the stacks' worst case per thread in the wave's memory budget
(executor.py sizes waves with it); when one block's worth would not fit, the depth limit
shrinks to what does.  A call deeper than the limit faults, naming kernel and line.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass, field

import numpy as np

from gdevd.errors import GdevError, KernelFault, MmuFault

from .calls import SCOPE

STACK_BYTES = 8192          # per thread (CUDA's default stack limit is 1 KiB)
ACTIVATION_OVERHEAD = 16    # bytes an activation costs beyond its .local frame


@dataclass(frozen=True)
class Site:
    """A call site, keyed by its return block: the argument variables receiving the return
    values, and the registers and .param variables its call saves (framelive.py)."""

    rets: tuple[str, ...]
    regs: tuple[str, ...]
    pvars: tuple[str, ...]


@dataclass
class FrameInfo:
    """A kernel's frame region, laid out at load: where it starts (block index), its
    ``.local`` frame size, the registers and ``.param`` variables some call saves, and the
    call sites by return block."""

    start: int
    frame: int
    regs: tuple[str, ...]
    pvars: tuple[str, ...]
    sites: dict[int, Site] = field(default_factory=dict)
    saved_bytes: int = 0

    def reservation(self, tpb: int, budget: int) -> tuple[int, int]:
        """(depth limit, bytes per thread) of a launch with blocks of ``tpb`` threads whose
        waves get ``budget`` bytes; GdevError (ENOMEM) if not one activation fits."""
        cost = self.saved_bytes + 4 + self.frame
        depth = STACK_BYTES // (self.frame + ACTIVATION_OVERHEAD)
        depth = min(depth, budget // (tpb * cost))
        if depth < 1:
            raise GdevError(errno.ENOMEM, f"an activation of a recursive function takes "
                            f"{cost} bytes per thread: blocks of {tpb} threads exceed the "
                            f"stack ({STACK_BYTES} bytes) or the engine's memory budget")
        return depth, depth * cost


def frame_info(linked, info, blocks, start_label: str) -> FrameInfo:
    """Lay out the frame region of ``linked`` (after coalescing) for KernelInfo ``info``:
    frame ``.local`` offsets join ``info.local_offsets`` (relative to the frame)."""
    from .framelive import save_sets
    from .ptxtypes import dtype_of
    end = 0
    for v in linked.frames.locals:
        align = max(v.align or 1, 1)
        end = (end + align - 1) // align * align
        info.local_offsets[v.name] = end
        end += v.size
    start = next(k for k, b in enumerate(blocks) if start_label in b.labels)
    names = {r for r in info.regs if r.startswith(SCOPE)} | \
        {p for p in info.pvars if p.startswith(SCOPE)}
    sites = {}
    for ret, live in save_sets(blocks, start, names).items():
        sites[ret] = Site(blocks[ret - 1].term.frame_args[0],
                          tuple(sorted(r for r in live if r in info.regs)),
                          tuple(sorted(p for p in live if p in info.pvars)))
    regs = tuple(sorted({r for s in sites.values() for r in s.regs}))
    pvars = tuple(sorted({p for s in sites.values() for p in s.pvars}))
    saved = sum(dtype_of(info.regs[r]).itemsize for r in regs) + \
        sum(max(info.pvars[p], 1) for p in pvars)
    return FrameInfo(start, (end + 15) // 16 * 16, regs, pvars, sites, saved)


class CallStack:
    """The call stacks of one wave (see the module docstring)."""

    def __init__(self, wave, frames: FrameInfo, depth_limit: int) -> None:
        env = wave.env
        self.env, self.frames, self.limit = env, frames, depth_limit
        self.n = env.n
        self.kernel = env.kernel.name
        self.sp = np.zeros(self.n, np.int32)
        self.regs = [env.regs[r] for r in frames.regs]
        self.pvars = [env.pvars[p] for p in frames.pvars]
        self.base = env.mem.lo_stride
        self.static_bytes = env.mem.local.size
        self.cap = 0
        self._alloc(0)
        # per return block: [(live array, its stack)] of what that site's call saves
        self.saves: dict[int, list] = {}
        if frames.frame:
            env.mem.frames = self

    def _alloc(self, cap: int) -> None:
        """Stacks for ``cap`` activations per thread, keeping the first ``self.cap``."""
        n, keep = self.n, min(cap, self.cap)

        def grown(old, shape, dt):
            new = np.zeros(shape, dt)
            if keep:
                new[:keep] = old[:keep]
            return new
        old_r = getattr(self, "saved_regs", [None] * len(self.regs))
        old_p = getattr(self, "saved_pvars", [None] * len(self.pvars))
        self.saved_regs = [grown(o, (cap, n), a.dtype) for o, a in zip(old_r, self.regs,
                                                                          strict=True)]
        self.saved_pvars = [grown(o, (cap, n, a.shape[1]), np.uint8)
                            for o, a in zip(old_p, self.pvars, strict=True)]
        self.ret_pc = grown(getattr(self, "ret_pc", None), (cap, n), np.int32)
        self.saves = {}
        mem, frame = self.env.mem, self.frames.frame
        if frame:
            mem.local = np.concatenate([mem.local[:self.static_bytes + keep * n * frame],
                                        np.zeros((cap - keep) * n * frame, np.uint8)])
        self.cap = cap

    def reset(self, depth_limit: int) -> None:
        """Empty stacks (a reused wave, or one going back to the pool: memory freed)."""
        self.sp.fill(0)
        self.limit = depth_limit
        self._alloc(0)

    def _saved(self, site: int) -> list:
        """[(array, stack)] of the registers and .param variables that the call returning
        to block ``site`` saves (after each growth of the stacks, built again)."""
        pairs = self.saves.get(site)
        if pairs is None:
            s, f = self.frames.sites[site], self.frames
            pairs = [(self.regs[f.regs.index(r)], self.saved_regs[f.regs.index(r)])
                     for r in s.regs]
            pairs += [(self.pvars[f.pvars.index(p)], self.saved_pvars[f.pvars.index(p)])
                      for p in s.pvars]
            self.saves[site] = pairs
        return pairs

    # -- the two terminators ----------------------------------------------------------
    def call(self, wave, pc: int, lanes, term) -> None:
        """``call.frame``: push the calling threads' activations (see the docstring)."""
        idx = self.env.lanes_all if lanes is None else lanes
        depth = self.sp[idx]
        top = int(depth.max())
        if top >= self.limit:
            raise KernelFault(errno.EFAULT, f"stack overflow: recursion deeper than "
                              f"{self.limit} calls in {self.kernel} at line {term.line}")
        if top >= self.cap:
            self._alloc(min(self.limit, max(top + 1, 2 * self.cap, 4)))
        # every thread at one depth (lockstep recursion): whole rows, no fancy indexing
        rows, at = (top, slice(None)) if lanes is None and top == int(depth.min()) else \
            (depth, idx)
        for live, saved in self._saved(pc + 1):
            saved[rows, at] = live[at]
        self.ret_pc[rows, at] = pc + 1
        pv = self.env.pvars
        for actual, formal in zip(*term.frame_args[1:], strict=True):
            w = min(pv[actual].shape[1], pv[formal].shape[1])
            pv[formal][at, :w] = pv[actual][at, :w]
        self.sp[at] = depth + 1
        self.env.regs["~fp"][at] = self.base + depth.astype(np.uint64) * self.frames.frame
        wave._goto(lanes, term.target)

    def ret(self, wave, pc: int, lanes, term) -> None:
        """``ret.frame``: pop the returning threads' activations (see the docstring)."""
        idx = self.env.lanes_all if lanes is None else lanes
        stay = None
        if term.guard is not None:
            p = wave._guard(term.guard, lanes)
            if not p.all():
                idx, stay = idx[p], idx[~p]
        depth = self.sp[idx] - 1
        pv = self.env.pvars
        values = [pv[name][idx] for name in term.frame_args[0]]
        dest = self.ret_pc[depth, idx]
        if lanes is None and stay is None and depth.min() == depth.max() and \
                dest.min() == dest.max():
            return self._ret_lockstep(wave, int(depth[0]), int(dest[0]), values)
        self.sp[idx] = depth
        sites = np.unique(dest)
        for site in sites:
            sel = dest == site if sites.size > 1 else slice(None)
            at, d = idx[sel], depth[sel]
            for live, saved in self._saved(int(site)):
                live[at] = saved[d, at]
            for actual, val in zip(self.frames.sites[int(site)].rets, values, strict=True):
                w = min(pv[actual].shape[1], val.shape[1])
                pv[actual][at, :w] = val[sel, :w]
        if stay is None and sites.size == 1:
            return wave._goto(lanes, int(sites[0]))
        wave.pc[idx] = dest
        if stay is not None:
            wave.pc[stay] = pc + 1
        wave.upc = -1
        return None

    def _ret_lockstep(self, wave, depth: int, site: int, values: list) -> None:
        """``ret.frame`` of every thread of the wave, all at ``depth`` and returning to
        block ``site``: whole rows."""
        for live, saved in self._saved(site):
            live[:] = saved[depth]
        pv = self.env.pvars
        for actual, val in zip(self.frames.sites[site].rets, values, strict=True):
            w = min(pv[actual].shape[1], val.shape[1])
            pv[actual][:, :w] = val[:, :w]
        self.sp[:] = depth
        wave._goto(None, site)

    # -- the local window ---------------------------------------------------------------
    def flat(self, va: np.ndarray, lanes: np.ndarray, nbytes: int) -> np.ndarray:
        """Offsets into the wave's local buffer of local addresses ``va`` of ``lanes``:
        static variables below ``base``, frames above (MemSys._flat's local case)."""
        mem, frame = self.env.mem, self.frames.frame
        off = va.astype(np.int64)
        rel = off - self.base
        static = rel < 0
        d = np.where(static, 0, rel // frame)
        x = np.where(static, 0, rel % frame)
        bad = np.where(static, off + nbytes > mem.local_size,
                       (x + nbytes > frame) | (d >= self.cap))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise MmuFault(int(va[i]), "out-of-bounds local", index=i)
        lanes = lanes.astype(np.int64)
        return np.where(static, lanes * mem.lo_stride + off,
                        self.static_bytes + (d * self.n + lanes) * frame + x)
