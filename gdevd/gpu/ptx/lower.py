"""Lowering of instructions that both engines run as sequences of simpler ones.

``cp.async`` (sm_80's asynchronous copy from global to shared memory, behind
``__pipeline_memcpy_async`` and ``cuda::memcpy_async``) is done at once, as a load and a
store: the ISA only promises the data by the matching ``cp.async.wait_group`` /
``wait_all``, and a copy finished early is one of the orders it allows (reading the
destination before waiting has no defined value).  So ``commit_group``, ``wait_group``
and ``wait_all`` become nothing.  The copy's forms:

* ``cp.async.{ca,cg}.shared.global [d], [s], n`` (n = 4, 8 or 16, also with src-size n):
  one ``ld.global`` and one ``st.shared`` of n bytes, with their alignment and faults;
* a smaller immediate src-size: those bytes copied one by one, the rest zero-filled;
* a register src-size or an ``ignore-src`` predicate (the zero-fill idiom of tiled
  loops): byte by byte, each byte loaded only where it lies inside src-size (so a source
  past the end of an array is never read), the others stored as zero.

A guarded ``cp.async`` runs behind a branch on its guard.  Cache hints (``.L2::128B``,
``.L2::cache_hint`` and its policy operand) change nothing here.

sm_90's packed 16-bit integer arithmetic (``add.u16x2`` ...) is lowered too (packed16.py),
16-bit atomics (``atomicAdd`` of ``__half``/``__nv_bfloat16``, atom16.py), bf16
arithmetic (bf16arith.py), f16 ``fma.relu`` (relu16.py) and ``cvt`` to tf32 (tf32.py).
"""

from __future__ import annotations

import itertools

from .atom16 import is_atom16, lower_atom16
from .bf16arith import is_bf16_arith, lower_bf16
from .errors import PtxError
from .packed16 import is_packed16, lower_packed16
from .relu16 import is_relu16, lower_relu16
from .syntax import Addr, Function, Imm, Instr, Label, ModuleAst, Reg, Sink, Sym, Vec
from .tf32 import is_tf32, lower_tf32

_WAITS = ("cp.async.commit_group", "cp.async.wait_group", "cp.async.wait_all")


def lower(ast: ModuleAst, name: str) -> ModuleAst:
    """``ast`` with every function's asynchronous copies and the instructions of
    ``_LOWERINGS`` lowered (see the docstring)."""
    for fn in ast.functions.values():
        if any(isinstance(s, Instr) and _lowered(s) for s in fn.body):
            fn.body = _lower_body(fn, name)
    return ast


# (is it one, its lowering(fn, instruction, Fresh, module name)) for the lowerings beside cp.async
_LOWERINGS = ((is_packed16, lower_packed16), (is_atom16, lower_atom16),
              (is_bf16_arith, lower_bf16), (is_relu16, lower_relu16), (is_tf32, lower_tf32))


class Fresh:
    """New names of one function for the lowerings: registers (declared in ``fn``) and
    labels."""

    def __init__(self, fn: Function) -> None:
        self.fn, self.count = fn, itertools.count()

    def reg(self, t: str) -> Reg:
        """A new register of type ``t``."""
        return _temp(self.fn, self.count, t)

    def label(self) -> str:
        """A new label name."""
        return f"$__lowered_at{next(self.count)}"


def _lowering(s: Instr):
    """The lowering of ``s`` (None: ``s`` stays; cp.async is _copy's)."""
    return next((low for is_it, low in _LOWERINGS if is_it(s)), None)


def _lowered(s: Instr) -> bool:
    return s.opcode.startswith("cp.async") or _lowering(s) is not None


def _lower_body(fn: Function, name: str) -> list:
    out: list = []
    new = Fresh(fn)
    for s in fn.body:
        low = _lowering(s) if isinstance(s, Instr) else None
        if low is not None:
            out += low(fn, s, new, name)
        elif not isinstance(s, Instr) or not s.opcode.startswith("cp.async"):
            out.append(s)
        elif s.opcode.startswith("cp.async.mbarrier.arrive"):
            out.append(_copy_arrive(s))
        elif not s.opcode.startswith(_WAITS):
            out += _copy(fn, s, new.count, name)
    return out


def _copy_arrive(s: Instr) -> Instr:
    """``cp.async.mbarrier.arrive[.noinc]``: the thread's copies are already done, so the
    arrive-on happens now.  ``.noinc`` counts toward the expected arrivals (an ``arrive``);
    without it the pending count was first raised by one, so the pair changes nothing but
    the address must still name an mbarrier (an ``expect_tx`` of 0 checks it)."""
    space = ".shared" if any(m.startswith("shared") for m in s.opcode.split(".")) else ""
    if "noinc" in s.opcode.split("."):
        return Instr(f"mbarrier.arrive{space}.b64", [Sink(), *s.args], s.line, s.guard)
    return Instr(f"mbarrier.expect_tx{space}.b64", [*s.args, Imm(0)], s.line, s.guard)


def _temp(fn: Function, fresh, t: str) -> Reg:
    reg = f"%__lowered{next(fresh)}"
    fn.regs[reg] = t
    return Reg(reg)


def _copy(fn: Function, s: Instr, fresh, name: str) -> list:
    mods = s.opcode.split(".")
    if not any(m.startswith("shared") for m in mods) or "global" not in mods or "bulk" in mods:
        raise PtxError(s.line, s.opcode, "unsupported cp.async form", name)
    args = list(s.args)
    if "L2::cache_hint" in mods:
        args = args[:-1]                    # the cache policy
    if len(args) not in (3, 4) or not isinstance(args[2], Imm) or \
            args[2].value not in (4, 8, 16) or \
            not all(isinstance(a, Addr) for a in args[:2]):
        raise PtxError(s.line, s.opcode, "cp.async needs [dst], [src], 4|8|16", name)
    dst, src, size = args[0], args[1], int(args[2].value)
    extra = args[3] if len(args) == 4 else Imm(size)
    if isinstance(extra, Imm) and int(extra.value) >= size:
        body = _whole(fn, dst, src, size, fresh, s.line)
    elif isinstance(extra, Imm | Reg):
        body = _bytes(fn, dst, src, size, extra, fresh, s.line)
    else:
        raise PtxError(s.line, s.opcode, "cp.async src-size must be a register or a number",
                       name)
    if s.guard is None:
        return body
    skip = f"$__cpasync_skip{next(fresh)}"
    reg, neg = s.guard
    return [Instr("bra", [Sym(skip)], s.line, (reg, not neg)), *body, Label(skip, s.line)]


def _whole(fn, dst: Addr, src: Addr, size: int, fresh, line: int) -> list:
    words = [_temp(fn, fresh, "b32") for _ in range(size // 4)]
    vec = f".v{len(words)}" if len(words) > 1 else ""
    val = Vec(tuple(words)) if len(words) > 1 else words[0]
    return [Instr(f"ld.global{vec}.b32", [val, src], line),
            Instr(f"st.shared{vec}.b32", [dst, val], line)]


def _bytes(fn, dst: Addr, src: Addr, size: int, limit, fresh, line: int) -> list:
    """Byte k copied if k < src-size (or if ignore-src is false), else zero."""
    b, p = _temp(fn, fresh, "b32"), _temp(fn, fresh, "pred")
    out: list = []
    for k in range(size):
        at, to = Addr(src.base, src.offset + k), Addr(dst.base, dst.offset + k)
        if isinstance(limit, Imm):          # a constant src-size: decided here
            load = Instr("ld.global.u8", [b, at], line) if k < int(limit.value) else \
                Instr("mov.b32", [b, Imm(0)], line)
            out += [load, Instr("st.shared.u8", [to, b], line)]
            continue
        ignore = fn.regs.get(limit.name) == "pred"
        test = Instr("not.pred", [p, limit], line) if ignore else \
            Instr("setp.gt.u32", [p, limit, Imm(k)], line)
        out += [test, Instr("mov.b32", [b, Imm(0)], line),
                Instr("ld.global.u8", [b, at], line, (p.name, False)),
                Instr("st.shared.u8", [to, b], line)]
    return out
