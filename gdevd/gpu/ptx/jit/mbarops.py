"""Translation of ``mbarrier`` (:mod:`gdevd.gpu.ptx.ops_mbarrier`) and ``elect.sync`` to C.

An mbarrier instruction is an *ordered* statement: its own loop over the active lanes in
lane order, each resolving its object with ``mbar_ptr`` (the interpreter's faults) and
applying ``mbar_step`` (``mbar.h``), as the interpreter applies its lanes one after another.
``elect.sync`` is a *raw* statement (it reads the other lanes of its warp): a first loop
finds each warp's leader, a second writes every lane's results.
"""

from __future__ import annotations

from ..errors import PtxError
from ..ops_mbarrier import PEND, parse
from ..syntax import Pair, Sink
from .arith import tr
from .memops import address
from .operands import Unsupported


def _form(ins):
    try:
        return parse(ins)
    except PtxError as exc:       # rejected at load by the interpreter already
        raise Unsupported(f"mbarrier: {exc}") from exc


def _ptr(ops, form, line: int) -> str:
    va = address(ops, form.addr)
    return (f"uint64_t *p_ = mbar_ptr(c, {va}, {int(form.space == 'generic')}); "
            f"if (!p_) FAULT({line});")


def _read(ops, operand) -> str:
    return "0" if operand is None else f"(uint64_t){ops.rd(operand, 'u32')}"


@tr("mbarrier")
def t_mbarrier(ins, ops):
    """mbarrier.{init,inval,arrive,arrive_drop,expect_tx,complete_tx,test_wait,try_wait,
    pending_count}.b64 (every form the interpreter decodes)."""
    form = _form(ins)
    if form.what == "pending":
        return "pure", ops.wr(form.dest, "u32", f"(uint32_t)({ops.rd(form.ref, 'b64')} & "
                              f"{PEND:#x}ull)")
    if form.what == "wait":
        ref = ops.rd(form.ref, "u32" if form.parity else "b64")
        want = f"((uint64_t){ref} & 1)" if form.parity else f"((uint64_t){ref} >> 63)"
        done = ops.wr(form.dest, "pred", f"((*p_ >> 63) != {want})")
        return "ordered", f"{{ {_ptr(ops, form, ins.line)} {done} }}"
    if form.what in ("init", "inval"):
        cnt = f"({_read(ops, form.count)} & {PEND:#x}ull)"
        return "ordered", f"{{ {_ptr(ops, form, ins.line)} *p_ = {cnt} | {cnt} << 20; }}"
    tok = f"mbar_step(p_, {form.kind}, {_read(ops, form.count)}, {_read(ops, form.tx)})"
    out = ops.wr(form.dest, "b64", tok) if form.dest is not None else f"(void){tok};"
    return "ordered", f"{{ {_ptr(ops, form, ins.line)} {out} }}"


@tr("elect")
def t_elect(ins, ops):
    """elect.sync d|p, membermask: per warp the lowest executing lane in its own mask."""
    dst = ins.args[0]
    d, p = (dst.first, dst.second) if isinstance(dst, Pair) else (dst, Sink())
    mask = ops.rd(ins.args[1], "b32")
    return "raw", (f"{{ uint32_t ld_[32]; for (int w_ = 0; w_ < 32; w_++) ld_[w_] = 32; "
                   f"LOOP(uint32_t m_ = (uint32_t){mask}; uint32_t l_ = (uint32_t)(i & 31); "
                   f"if (((m_ >> l_) & 1u) && l_ < ld_[i >> 5]) ld_[i >> 5] = l_;); "
                   f"LOOP(uint32_t l_ = ld_[i >> 5]; {ops.wr(d, 'u32', 'l_ < 32 ? l_ : 0u')} "
                   f"{ops.wr(p, 'pred', '(uint32_t)(i & 31) == l_')}); }}")
