"""Translation of memory instructions to C: ld, st, atom, red, cvta, isspacep, hints.

An access resolves its address to a host pointer with the prelude's ``gptr`` (global and
const, through the TLB and page table), ``sptr`` (the block's shared memory), ``lptr``
(the lane's local memory), ``pptr`` (kernel parameters, read-only) or ``vptr`` (generic);
a NULL pointer means the fault is recorded in the context, and the kernel returns -1 with
the instruction's PTX line.  Faults, alignment rules and reasons follow ``MemSys``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..decode import regs_of
from ..syntax import Addr, Reg, Sink, Sym
from .arith import tr
from .operands import CT, UT, WINDOWS, Unsupported, from_bits, to_bits, width

SPACES = ("global", "shared", "local", "const", "param")
IGNORED = {"nc", "ca", "cg", "cs", "lu", "cv", "wb", "wt", "volatile", "relaxed", "acquire",
           "release", "weak", "gpu", "sys", "cta", "mmio", "L1::evict_normal",
           "L1::evict_unchanged", "L1::evict_first", "L1::evict_last", "L1::no_allocate",
           "L2::evict_first", "L2::evict_last", "L2::evict_normal", "L2::64B", "L2::128B",
           "L2::256B", "L2::cache_hint", "v2", "v4", "aligned", "unified", "acq_rel", "noftz"}
ACC_R, ACC_W = "GDEV_ACC_READ", "GDEV_ACC_WRITE"
# Qualifiers of accesses by which threads of different blocks talk (C volatile, the memory
# model's relaxed/acquire/release, the cache-global forms CUB uses before sm_70).
_SHARED_ORDER = {"volatile", "relaxed", "acquire", "release", "cg", "cv", "mmio"}
_WHOLE = {8: "gdev_u64u", 16: "gdev_v16"}     # prelude.h: one access of that many bytes


def _whole(ins, space: str, total: int) -> str | None:
    """The C type a vector access moves in one piece, None if element by element.

    An aligned 8- or 16-byte vector is one access on the GPU, and CUB's decoupled
    look-back depends on it: a tile's status and value are published by one
    ``st.relaxed.gpu.v2.u32`` and read by one ``ld``.  Blocks run on several engine
    threads, so such an access to memory other blocks see is one volatile C access (the
    others stay element by element, which the compiler can vectorize across lanes)."""
    if total not in _WHOLE or _vec(ins) == 1 or space not in ("global", "generic") or \
            not ins.flags & _SHARED_ORDER:
        return None
    return _WHOLE[total]


def space_of(ins) -> str:
    """The state space named by the instruction, ``generic`` if none."""
    named = [m for m in ins.mods if m in SPACES]
    if len(named) > 1:
        raise Unsupported("two state spaces")
    return named[0] if named else "generic"


def _vec(ins) -> int:
    return 4 if "v4" in ins.flags else 2 if "v2" in ins.flags else 1


def address(ops, a: Addr) -> str:
    """C expression (uint64_t) of a memory operand's address, as ``addr_reader``."""
    base, off = a.base, a.offset
    if isinstance(base, Reg):
        _, rt = ops.reg(base.name)
        if rt != "pred" and width(rt) <= 4:
            return f"((uint64_t)(uint32_t)({ops.rd(base, 'u32')} + {off & 0xFFFFFFFF:#x}u))"
        return f"((uint64_t)({ops.rd(base, 'u64')} + {off & (2**64 - 1):#x}ull))"
    if base is None:
        return f"{off & (2**64 - 1):#x}ull"
    return ops.sym(base.name, off, "u64")


def pointer(space: str, va: str, align: int, size: int, acc: str) -> str:
    """C expression of the host pointer of an access (NULL on a fault)."""
    if space in ("global", "const"):
        return f"gptr(c, {va}, {align}, {acc})"
    if space == "shared":
        return f"sptr(c, {va}, {align}, {size})"
    if space == "local":
        return f"lptr(c, {va}, {align}, {size}, i)"
    if space == "param":
        return f"pptr(c, {va}, {align}, {size}, {acc})"
    return f"vptr(c, {va}, {align}, {size}, {acc}, i)"


def _check(ins, extra: frozenset = frozenset()) -> None:
    bad = ins.flags - IGNORED - set(SPACES) - extra
    if bad:
        raise Unsupported(f"modifier .{sorted(bad)[0]}")


@dataclass(frozen=True)
class Access:
    """A load or store through a translated pointer: ``body`` is C for lane i using the host
    pointer ``p_``; cgen either translates every lane's ``addr`` first (``xlate``) or, under
    a guard, resolves ``pointer`` lane by lane."""

    addr: str
    space: str
    align: int
    size: int
    acc: str
    line: int
    body: str
    hoist: bool = False     # a load whose address is data-uniform at the block's entry
    safe: bool = False      # a shared access proven aligned and in bounds (jit/ranges.py)

    @property
    def space_code(self) -> str:
        """The prelude's SP_ constant of the access's state space."""
        return {"global": "SP_GLOBAL", "const": "SP_GLOBAL", "shared": "SP_SHARED",
                "local": "SP_LOCAL", "param": "SP_PARAM"}.get(self.space, "SP_GENERIC")

    def pointer(self) -> str:
        """C expression of lane i's host pointer (NULL on a fault)."""
        return pointer(self.space, self.addr, self.align, self.size, self.acc)


@tr("ld", "ldu")
def t_ld(ins, ops) -> tuple[str, object]:
    """Loads of scalars and vectors from every state space."""
    _check(ins)
    space, t, count = space_of(ins), ins.type(), _vec(ins)
    w = width(t)
    dests = regs_of(ins.args[0])
    a = ins.args[1]
    if not isinstance(a, Addr) or len(dests) != count or \
            not all(isinstance(d, Reg | Sink) for d in dests):
        raise Unsupported("ld operands")
    whole = _whole(ins, space, w * count)
    at = "(const uint8_t *)&t_" if whole else "p_"
    loads = " ".join(f"{{ {UT[w]} v_; memcpy(&v_, {at} + {k * w}, {w}); "
                     f"{ops.wr(d, t, from_bits('v_', t))} }}" for k, d in enumerate(dests))
    if whole:
        loads = f"{{ {whole} t_ = *(volatile const {whole} *)p_; {loads} }}"
    src = _param_src(ops, space, a, w * count)
    if src is not None:    # a named parameter: lane-local (or uniform), cannot fault
        return "pure", f"{{ const uint8_t *p_ = {src}; {loads} }}"
    align = w * count if count in (2, 4) else w
    return "mem", Access(address(ops, a), space, align, w * count, ACC_R, ins.line, loads)


def _param_src(ops, space: str, a: Addr, size: int) -> str | None:
    """Pointer expression of a named ``.param`` access (kernel or call parameter)."""
    if space != "param" or not isinstance(a.base, Sym):
        return None
    kind, off = ops.symbols.get(a.base.name, (None, 0))
    if kind == "kparam":
        if off + a.offset + size > ops.param_size:
            raise Unsupported("parameter read past the buffer")
        return f"(c->params + {off + a.offset})"
    if kind == "pvar":
        return f"(c->pvars + (uint64_t)i * c->pv_stride + {off + a.offset})"
    raise Unsupported("ld.param of a non-parameter")


@tr("st")
def t_st(ins, ops) -> tuple[str, object]:
    """Stores of scalars and vectors to every writable state space."""
    _check(ins)
    space, t, count = space_of(ins), ins.type(), _vec(ins)
    w = width(t)
    srcs = regs_of(ins.args[1])
    a = ins.args[0]
    if not isinstance(a, Addr) or len(srcs) != count:
        raise Unsupported("st operands")
    vals = " ".join(f"{UT[w]} v{k}_ = {to_bits(ops.rd(s, t), t)};" for k, s in enumerate(srcs))
    whole = _whole(ins, space, w * count)
    at = "(uint8_t *)&t_" if whole else "p_"
    stores = " ".join(f"memcpy({at} + {k * w}, &v{k}_, {w});" for k in range(count))
    if whole:
        stores = f"{whole} t_; {stores} *(volatile {whole} *)p_ = t_;"
    body = f"{{ {vals} {stores} }}"
    if space == "param":
        if not isinstance(a.base, Sym) or ops.symbols.get(a.base.name, ("",))[0] != "pvar":
            raise Unsupported("st.param to a kernel parameter")
        return "pure", f"{{ uint8_t *p_ = {_param_src(ops, space, a, w * count)}; {body} }}"
    align = w * count if count in (2, 4) else w
    return "mem", Access(address(ops, a), space, align, w * count, ACC_W, ins.line, body)


_ATOM_TYPES = {"u32", "b32", "s32", "u64", "b64", "s64", "f32", "f64"}
_RMW = {"add": "o_ + a_", "min": "(o_ < a_ ? o_ : a_)", "max": "(o_ > a_ ? o_ : a_)",
        "exch": "a_", "cas": "(o_ == a_ ? b_ : o_)", "and": "(o_ & a_)", "or": "(o_ | a_)",
        "xor": "(o_ ^ a_)", "inc": "(o_ >= a_ ? 0 : o_ + 1)",
        "dec": "((o_ == 0 || o_ > a_) ? a_ : o_ - 1)"}


@tr("atom", "red")
def t_atom(ins, ops) -> str:
    """atom/red: one compare-and-swap loop per lane, lanes in order (as ``atomic_v``)."""
    _check(ins, frozenset(_RMW))
    names = [m for m in ins.mods if m in _RMW]
    t = ins.type()
    if len(names) != 1 or t not in _ATOM_TYPES:
        raise Unsupported("atomic op/type")
    name = names[0]
    if t in ("f32", "f64") and name not in ("add", "exch"):
        raise Unsupported("float atomic")
    space = space_of(ins)
    if space not in ("global", "shared", "generic"):
        raise Unsupported(f"atomic in .{space}")
    t = "u" + t[1:] if t[0] == "b" else t
    red = ins.base == "red"
    d, a = (None, ins.args[0]) if red else (ins.args[0], ins.args[1])
    srcs = ins.args[1:] if red else ins.args[2:]
    if not isinstance(a, Addr) or len(srcs) != (2 if name == "cas" else 1):
        raise Unsupported("atomic operands")
    w, ct, ut = width(t), CT[t], UT[width(t)]
    rmw = _RMW[name]
    if t[0] in "us" and name in ("add", "inc", "dec"):   # wrap in unsigned arithmetic
        rmw = rmw.replace("o_ + a_", f"({ct})(({ut})o_ + ({ut})a_)") \
            .replace("o_ + 1", f"({ct})(({ut})o_ + 1u)").replace("o_ - 1", f"({ct})(({ut})o_ - 1u)")
    b = ops.rd(srcs[1], t) if name == "cas" else f"({ct})0"
    ptr = pointer(space, address(ops, a), w, w, f"{ACC_R} | {ACC_W}")
    out = ops.wr(d, t, "o_") if d is not None else ""
    return (f"{{ {ct} a_ = {ops.rd(srcs[0], t)}, b_ = {b}; (void)b_; uint8_t *p_ = {ptr}; "
            f"if (!p_) FAULT({ins.line}); {ut} c_ = __atomic_load_n(({ut} *)p_, "
            f"__ATOMIC_RELAXED); {ct} o_; {ut} n_; do {{ o_ = {from_bits('c_', t)}; "
            f"n_ = {to_bits(rmw, t)}; }} while (!__atomic_compare_exchange_n(({ut} *)p_, "
            f"&c_, n_, 1, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)); {out} }}")


@tr("cvta")
def t_cvta(ins, ops) -> str:
    """cvta.space (to generic: add the window) and cvta.to.space (subtract it)."""
    space = space_of(ins)
    t = ins.type()
    if space == "generic" or t not in ("u32", "u64", "b32", "b64"):
        raise Unsupported("cvta")
    d, a = ins.args[:2]
    win = WINDOWS.get(space, 0) & ((1 << 8 * width(t)) - 1)
    x = ops.rd(a, t)
    if not win:
        return ops.wr(d, t, x)
    sign = "-" if "to" in ins.flags else "+"
    return ops.wr(d, t, f"(({CT[t]})({x} {sign} {win:#x}ull))")


@tr("isspacep")
def t_isspacep(ins, ops) -> str:
    """isspacep.space: the generic address lies in that window."""
    code = {"global": 0, "const": 0, "shared": 1, "local": 2, "param": 4}[space_of(ins)]
    d, a = ins.args[:2]
    return ops.wr(d, "pred", f"(({ops.rd(a, 'u64')} >> 48) == {code})")


@tr("prefetch", "prefetchu", "membar", "fence", "nanosleep", "pmevent", "brkpt",
    "discard", "applypriority")
def t_hint(ins, ops) -> str:
    """Fences, prefetches and hints: no effect on an in-order machine."""
    return ""
