"""A kernel's executable form: decoded instructions grouped into basic blocks.

Every instruction is decoded once at load time into a binder (see :mod:`decode`); control
flow (``bra``, ``ret``/``exit``, ``bar.sync``, ``trap``) ends a basic block and is carried by
the block's terminator, which the executor interprets.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import (  # noqa: F401  (registering the instruction families)
    ops_atom,
    ops_bits,
    ops_cmp,
    ops_cvt,
    ops_float,
    ops_int,
    ops_matrix,
    ops_mbarrier,
    ops_mem,
    ops_mma,
    ops_simd,
    ops_surf,
    ops_tex,
    ops_warp,
    ops_wmma,
)
from .calls import CALL_OP, RET_OP
from .decode import DECODERS, Ins
from .devrt import calls_devrt
from .errors import PtxError
from .ops_devrt import devrt_binder
from .ops_heap import SIGNATURES, heap_binder
from .ops_printf import vprintf_binder
from .syntax import Instr, Label, Sym

FALL, BRA, EXIT, BAR, TRAP, CALL, RET = range(7)     # CALL, RET: calls.py, callstack.py
ASSERT_SIZES = (8, 8, 4, 8)    # __assertfail(message, file, line, function, charSize)

# Register-only, lane-local instructions: in a uniform wave whose other threads have all
# exited they may run over every lane (idx=None, the fast path), since exited threads'
# registers are never read again.  Memory, warp-collective and call instructions may not.
PURE = frozenset("""add sub mul mad mul24 mad24 sad div rem abs neg min max addc subc madc fma
sqrt rsqrt rcp ex2 lg2 sin cos tanh copysign testp and or xor not cnot shl shr shf popc clz
bfind brev bfe bfi prmt lop3 dp4a dp2a setp set selp slct cvt mov cvta isspacep fns vadd4
vsub4 vavrg4 vabsdiff4 vmin4 vmax4 vset4 vadd2 vsub2 vavrg2 vabsdiff2 vmin2 vmax2
vset2""".split())


@dataclass
class Terminator:
    """How a block ends: kind, target block (BRA), guard ``(pred, negated)``, source line;
    a device ``assert`` (a TRAP) also names its ``__assertfail`` argument variables."""

    kind: int
    target: int = -1
    guard: tuple[str, bool] | None = None
    line: int = 0
    assert_args: tuple[str, ...] = ()
    frame_args: tuple[tuple[str, ...], ...] = ()    # CALL: rets, params, formals; RET: rets


@dataclass
class Block:
    """A basic block: binders of its straight-line instructions and its terminator."""

    binders: list = field(default_factory=list)
    instrs: list = field(default_factory=list)     # the decoded Instr of each binder
    lines: list[int] = field(default_factory=list)
    pure: list[bool] = field(default_factory=list)
    term: Terminator = field(default_factory=lambda: Terminator(FALL))
    labels: list[str] = field(default_factory=list)


_COLLECTIVE = {"shfl", "vote", "match", "redux", "wmma", "elect", "mma", "ldmatrix",
               "stmatrix", "movmatrix"}


def warp_collective(blk: Block) -> bool:
    """Whether ``blk`` has an instruction that a warp executes together (shuffle, vote,
    match, redux, WMMA, ``bar.warp.sync``): the engines' forward-progress step must not run
    it for part of a warp while the warp's other live threads are elsewhere."""
    for ins in blk.instrs:
        base, *mods = ins.opcode.split(".")
        if base in _COLLECTIVE or (base in ("bar", "barrier") and "warp" in mods):
            return True
    return False


def guarded(binder, guard: tuple[str, bool]):
    """Wrap a binder so its closure only runs for lanes whose guard predicate holds."""
    name, neg = guard

    def bind(env):
        f = binder(env)
        pred = env.regs[name]

        def run(idx):
            p = pred if idx is None else pred[idx]
            if neg:
                p = ~p
            count = np.count_nonzero(p)
            if count == p.size:
                return f(idx)
            if not count:
                return None
            return f(np.flatnonzero(p) if idx is None else idx[p])
        return run
    return bind


def _control(ins: Ins, instr: Instr):
    """Terminator of a control instruction, or None if ``instr`` is not one."""
    base = ins.base
    if instr.opcode in (CALL_OP, RET_OP):
        names = tuple(tuple(s.name for s in g.items) for g in instr.args[instr.opcode ==
                                                                          CALL_OP:])
        kind, target = (CALL, instr.args[0].name) if instr.opcode == CALL_OP else (RET, None)
        return Terminator(kind, guard=instr.guard, line=instr.line, frame_args=names), target
    if base == "bra":
        tgt = instr.args[0] if instr.args else None
        if not isinstance(tgt, Sym):
            raise ins.fail("bra needs a label")
        return Terminator(BRA, guard=instr.guard, line=instr.line), tgt.name
    if base in ("ret", "exit"):
        return Terminator(EXIT, guard=instr.guard, line=instr.line), None
    if base == "trap":
        return Terminator(TRAP, guard=instr.guard, line=instr.line), None
    if instr.opcode.startswith("builtin.__assert"):
        return Terminator(TRAP, guard=instr.guard, line=instr.line,
                          assert_args=assert_args(ins, instr)), None
    if cluster_arrive(ins):
        return None
    if base in ("bar", "barrier") and "warp" not in ins.flags:
        if "arrive" in ins.flags:
            raise ins.fail("bar.arrive is not supported")
        if instr.guard is not None:
            raise ins.fail("predicated barriers are not supported")
        return Terminator(BAR, line=instr.line), None
    return None


def cluster_arrive(ins: Ins) -> bool:
    """Whether ``ins`` is ``barrier.cluster.arrive``: a launch is a grid of clusters of one
    CTA, so the arrival does nothing and ``barrier.cluster.wait`` is the CTA's barrier (a
    thread waits for the others to reach their wait, not only their arrival: stricter than
    a GPU, the same for code that arrives and then waits, as ``cluster.sync()`` does)."""
    return ins.base == "barrier" and "cluster" in ins.flags and "arrive" in ins.flags


def assert_args(ins: Ins, instr: Instr) -> tuple[str, ...]:
    """The argument variables of a ``builtin.__assertfail`` call (linker.py): message,
    file, line, function and character size, as CUDA's ``__assertfail`` declares them, or
    the first four, as debug builds call ``__assert_fail``."""
    params = instr.args[1].items if len(instr.args) > 1 else ()
    if len(params) not in (4, 5) or not all(isinstance(p, Sym) for p in params):
        raise ins.fail("__assertfail takes a message, file, line, function (and char size)")
    return tuple(p.name for p in params[:4])


BF16_FORMS = {"cvt", "fma", "mov", "ld", "ldu", "st", "selp", "wmma", "mma"}


def decode_instr(instr: Instr, ctx):
    """Binder of one non-control instruction (PtxError if unsupported)."""
    ins = Ins(instr, ctx)
    call = instr.opcode[len("builtin."):] if instr.opcode.startswith("builtin.") else None
    if call == "vprintf" or call in SIGNATURES or calls_devrt(instr):
        binder = vprintf_binder(ins, instr) if call == "vprintf" else \
            heap_binder(ins, instr) if call in SIGNATURES else devrt_binder(ins, instr)
        return guarded(binder, instr.guard) if instr.guard else binder
    if (ins.base in ("bar", "barrier") and "warp" in ins.flags) or cluster_arrive(ins):
        return lambda env: (lambda idx: None)
    dec = DECODERS.get(ins.base)
    if dec is None:
        raise ins.fail(f"unsupported instruction {ins.base}")
    if {"bf16", "bf16x2"} & set(ins.types) and ins.base not in BF16_FORMS:
        # bf16 registers hold bits: anything else would compute on them as integers
        raise ins.fail(f"{ins.base} of bf16 is not supported (only sm_80's cvt and fma)")
    try:
        binder = dec(ins)
    except PtxError:
        raise
    except (KeyError, IndexError, ValueError, TypeError, AttributeError) as exc:
        raise ins.fail(f"malformed instruction: {exc}") from exc
    return guarded(binder, instr.guard) if instr.guard else binder


def build_blocks(code: list, ctx) -> list[Block]:
    """Split linked code into basic blocks with resolved branch targets."""
    blocks: list[Block] = [Block()]
    pending: list[tuple[Block, str, Instr]] = []
    label_block: dict[str, int] = {}

    for item in code:
        if isinstance(item, Label):
            cur = blocks[-1]
            if cur.binders or cur.term.kind != FALL:
                blocks.append(Block())
            blocks[-1].labels.append(item.name)
            label_block[item.name] = len(blocks) - 1
            continue
        ins = Ins(item, ctx)
        ctl = _control(ins, item)
        if ctl is None:
            blocks[-1].binders.append(decode_instr(item, ctx))
            blocks[-1].instrs.append(item)
            blocks[-1].lines.append(item.line)
            blocks[-1].pure.append(ins.base in PURE)
            continue
        term, target = ctl
        blocks[-1].term = term
        if target is not None:
            pending.append((blocks[-1], target, item))
        blocks.append(Block())
        if term.kind == BAR and "red" in ins.flags:   # the reduction runs after release
            red = Instr("barred." + ".".join(ins.mods), item.args, item.line)
            blocks[-1].binders.append(decode_instr(red, ctx))
            blocks[-1].instrs.append(red)
            blocks[-1].lines.append(item.line)
            blocks[-1].pure.append(False)
    for blk, target, item in pending:
        if target not in label_block:
            raise PtxError(item.line, target, "branch to an undefined label", ctx.module_name)
        blk.term.target = label_block[target]
    if blocks[-1].term.kind == FALL:
        blocks[-1].term = Terminator(EXIT, line=0)   # falling off the end returns
    return blocks
