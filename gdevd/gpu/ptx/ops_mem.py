"""Loads and stores in every state space (scalar and .v2/.v4), cvta, isspacep, prefetch.

Global, const and generic accesses go through :class:`MemSys` (and so through the MMU);
kernel parameters are uniform and read once per wave from the launch's parameter buffer;
``.param`` variables of device-function calls are per-thread byte arrays.
"""

from __future__ import annotations

import numpy as np

from .decode import Ins, nop, op, regs_of
from .memory import LOCAL_WINDOW, PARAM_WINDOW, SHARED_WINDOW
from .ptxtypes import DTYPES, size_of
from .syntax import Addr, Reg, Sink, Sym

SPACES = ("global", "shared", "local", "const", "param")
_IGNORED = {"nc", "ca", "cg", "cs", "lu", "cv", "wb", "wt", "volatile", "relaxed", "acquire",
            "release", "weak", "gpu", "sys", "cta", "mmio", "L1::evict_normal",
            "L1::evict_unchanged", "L1::evict_first", "L1::evict_last", "L1::no_allocate",
            "L2::evict_first", "L2::evict_last", "L2::evict_normal", "L2::64B", "L2::128B",
            "L2::256B", "L2::cache_hint", "v2", "v4", "aligned", "unified"}


def space_of(ins: Ins) -> str:
    """The state space named by the instruction, ``generic`` if none."""
    named = [m for m in ins.mods if m in SPACES]
    if len(named) > 1:
        raise ins.fail("more than one state space")
    return named[0] if named else "generic"


def vec_of(ins: Ins) -> int:
    """Vector width (1, 2 or 4)."""
    for v in (2, 4):
        if f"v{v}" in ins.flags:
            return v
    return 1


def addr_reader(env, addr: Addr):
    """Reader of a memory operand's address (uint64 array or scalar) in its state space."""
    off = np.uint64(addr.offset & 0xFFFFFFFFFFFFFFFF)
    base = addr.base
    if isinstance(base, Reg) and env.regs[base.name].dtype.itemsize <= 4:
        # a 32-bit address register: [%r+imm] wraps modulo 2**32
        r32 = env.rd(base, "u32")
        off32 = np.uint32(addr.offset & 0xFFFFFFFF)
        return lambda idx: np.asarray(r32(idx) + off32).astype(np.uint64)
    if isinstance(base, Reg):
        r = env.rd(base, "u64")
        if addr.offset == 0:
            return r
        return lambda idx: r(idx) + off
    if base is None:
        value = np.uint64(addr.offset & 0xFFFFFFFFFFFFFFFF)
        return lambda idx: value
    return env.symbol_reader(base.name, addr.offset, "u64")


def _check_addr(ins: Ins, space: str) -> Addr:
    a = ins.args[0] if ins.base in ("st", "red") else ins.args[1]
    if not isinstance(a, Addr):
        raise ins.fail("expected a memory operand [..]")
    if isinstance(a.base, Sym):
        sp = ins.ctx.symbol_space(a.base.name)
        if sp is None:
            raise ins.fail(f"unknown symbol {a.base.name}")
        if space == "param" and sp not in ("kparam", "param"):
            raise ins.fail("ld.param of a non-parameter")
    elif space == "param" and ins.base != "ld":
        raise ins.fail("register-addressed .param stores are not supported")
    return a


def _mem_space(space: str) -> str:
    return "global" if space == "const" else space


@op("ld", "ldu")
def dec_ld(ins: Ins):
    """Decoder of ``ld``/``ldu`` (see the module docstring)."""
    space = space_of(ins)
    ins.only(_IGNORED | set(SPACES))
    ins.nargs(2)
    t = ins.type()
    count = vec_of(ins)
    dests = regs_of(ins.args[0])
    if len(dests) != count or not all(isinstance(d, Reg | Sink) for d in dests):
        raise ins.fail("destination does not match the vector width")
    a = _check_addr(ins, space)
    dt = DTYPES[t]
    if space == "param" and isinstance(a.base, Sym):
        return _ld_param(ins, a, dests, t, count)
    mspace = _mem_space(space)

    def bind(env):
        ws = [env.wr(d, t) for d in dests]
        ra = addr_reader(env, a)
        mem, lanes_all = env.mem, env.lanes_all

        def run(idx):
            lanes = lanes_all if idx is None else idx
            va = np.broadcast_to(ra(idx), lanes.shape)
            vals = mem.load(mspace, va, lanes, dt, count)
            for k, w in enumerate(ws):
                w(idx, vals[:, k])
        return run
    return bind


def _ld_param(ins, a: Addr, dests, t, count):
    assert isinstance(a.base, Sym)
    kind = ins.ctx.symbol_space(a.base.name)
    dt = DTYPES[t]
    w_size = size_of(t)

    def bind(env):
        ws = [env.wr(d, t) for d in dests]
        if kind == "kparam":   # uniform: one read per launch
            start = env.symbols[a.base.name][1] + a.offset

            def run_kparam(idx):
                vals = env.kparam(start, dt, count)
                for k, w in enumerate(ws):
                    w(idx, vals[k])
            return run_kparam
        store = env.pvars[a.base.name]
        lo, hi = a.offset, a.offset + w_size * count

        def run(idx):
            raw = store[:, lo:hi] if idx is None else store[idx, lo:hi]
            vals = np.ascontiguousarray(raw).view(dt)
            for k, w in enumerate(ws):
                w(idx, vals[:, k])
        return run
    return bind


@op("st")
def dec_st(ins: Ins):
    """Decoder of ``st`` (see the module docstring)."""
    space = space_of(ins)
    ins.only(_IGNORED | set(SPACES))
    ins.nargs(2)
    t = ins.type()
    count = vec_of(ins)
    srcs = regs_of(ins.args[1])
    if len(srcs) != count:
        raise ins.fail("source does not match the vector width")
    a = _check_addr(ins, space)
    dt = DTYPES[t]
    if space == "param":
        if not isinstance(a.base, Sym) or ins.ctx.symbol_space(a.base.name) != "param":
            raise ins.fail("st.param to a kernel parameter")
        return _st_param(a, srcs, t, count)
    mspace = _mem_space(space)

    def bind(env):
        rs = [env.rd(s, t) for s in srcs]
        ra = addr_reader(env, a)
        mem, lanes_all = env.mem, env.lanes_all

        def run(idx):
            lanes = lanes_all if idx is None else idx
            n = lanes.size
            va = np.broadcast_to(ra(idx), lanes.shape)
            vals = np.empty((n, count), dtype=dt)
            for k, r in enumerate(rs):
                vals[:, k] = r(idx)
            mem.store(mspace, va, lanes, vals)
        return run
    return bind


def _st_param(a: Addr, srcs, t, count):
    dt = DTYPES[t]
    lo, hi = a.offset, a.offset + size_of(t) * count

    def bind(env):
        rs = [env.rd(s, t) for s in srcs]
        store = env.pvars[a.base.name]

        def run(idx):
            n = env.n if idx is None else idx.size
            vals = np.empty((n, count), dtype=dt)
            for k, r in enumerate(rs):
                vals[:, k] = r(idx)
            raw = vals.view(np.uint8).reshape(n, hi - lo)
            if idx is None:
                store[:, lo:hi] = raw
            else:
                store[idx, lo:hi] = raw
        return run
    return bind


_WINDOWS = {"global": 0, "const": 0, "param": PARAM_WINDOW, "shared": SHARED_WINDOW,
            "local": LOCAL_WINDOW}


@op("cvta")
def dec_cvta(ins: Ins):
    """cvta.space (to generic: add the window) and cvta.to.space (subtract it)."""
    ins.nargs(2)
    space = space_of(ins)
    if space == "generic":
        raise ins.fail("cvta needs a state space")
    t = ins.type()
    if t not in ("u32", "u64", "b32", "b64"):
        raise ins.fail("cvta needs .u32 or .u64")
    to = "to" in ins.flags
    d, a = ins.dst(0), ins.src(1)
    win = DTYPES[t].type(_WINDOWS[space] & ((1 << 8 * size_of(t)) - 1))

    def bind(env):
        w, ra = env.wr(d, t), env.rd(a, t)
        if not win:
            return lambda idx: w(idx, ra(idx))
        if to:
            return lambda idx: w(idx, ra(idx) - win)
        return lambda idx: w(idx, ra(idx) + win)
    return bind


@op("isspacep")
def dec_isspacep(ins: Ins):
    """Decoder of ``isspacep`` (see the module docstring)."""
    ins.nargs(2)
    space = space_of(ins)
    d, a = ins.dst(0), ins.src(1)
    code = {"global": 0, "const": 0, "shared": 1, "local": 2, "param": 4}[space]

    def bind(env):
        w, ra = env.wr(d, "pred"), env.rd(a, "u64")
        return lambda idx: w(idx, (np.asarray(ra(idx)) >> np.uint64(48)) == code)
    return bind


@op("prefetch", "prefetchu", "membar", "fence", "nanosleep", "pmevent", "brkpt",
    "discard", "applypriority")
def dec_hint(ins: Ins):
    """Decoder of fences, prefetches and hints: no effect on an in-order emulated GPU."""
    return nop(ins)
