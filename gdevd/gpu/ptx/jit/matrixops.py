"""Translation of ``ldmatrix``, ``stmatrix`` and ``movmatrix`` (:mod:`gdevd.gpu.ptx.ops_matrix`)
to C: *raw* statements that first copy every lane's address (or source register) of the
block, as a lane reads other lanes', then move each executing lane's elements in lane
order, through the access's pointer function with the interpreter's faults."""

from __future__ import annotations

from ..errors import PtxError
from ..ops_matrix import matrix_form
from .arith import tr
from .memops import ACC_R, ACC_W, address, pointer
from .operands import Unsupported


@tr("ldmatrix", "stmatrix")
def t_ldmatrix(ins, ops):
    """ldmatrix/stmatrix.sync.aligned.m8n8.x{1,2,4}[.trans][.shared].b16."""
    try:
        regs, a, count, trans, space = matrix_form(ins)
    except PtxError as exc:
        raise Unsupported(f"{ins.base}: {exc}") from exc
    load = ins.base == "ldmatrix"
    src, off = ("8 * j_ + 2 * t_ + k_", "2 * g_") if trans else ("8 * j_ + g_", "4 * t_ + 2 * k_")
    ptr = pointer(space, "a_", 2, 2, ACC_R if load else ACC_W)
    move = "memcpy(&e16_, p_, 2); o_[j_] |= (uint32_t)e16_ << (16 * k_);" if load else \
        "e16_ = (uint16_t)(o_[j_] >> (16 * k_)); memcpy(p_, &e16_, 2);"
    regs_in = " ".join(f"o_[{j}] = {ops.rd(r, 'b32')};" for j, r in enumerate(regs))
    regs_out = " ".join(ops.wr(r, "b32", f"o_[{j}]") for j, r in enumerate(regs))
    return "raw", (
        f"{{ uint64_t va_[1024]; for (int i = 0; i < n; i++) va_[i] = {address(ops, a)}; "
        f"LOOP(int l_ = i & 31, s0_ = i - l_, g_ = l_ >> 2, t_ = l_ & 3; "
        f"uint32_t o_[4] = {{0, 0, 0, 0}}; {'' if load else regs_in} "
        f"for (int j_ = 0; j_ < {count}; j_++) for (int k_ = 0; k_ < 2; k_++) {{ "
        f"int r_ = s0_ + {src}; if (r_ > n - 1) r_ = n - 1; "
        f"uint64_t a_ = va_[r_] + (uint64_t)({off}); uint8_t *p_ = {ptr}; "
        f"if (!p_) FAULT({ins.line}); uint16_t e16_; {move} }} "
        f"{regs_out if load else ''}); }}")


@tr("movmatrix")
def t_movmatrix(ins, ops):
    """movmatrix.sync.aligned.m8n8.trans.b16 d, a: the warp's 8x8 matrix transposed."""
    if not {"trans", "m8n8"} <= ins.flags or len(ins.args) != 2:
        raise Unsupported("movmatrix form")
    d, a = ins.args
    return "raw", (
        f"{{ uint32_t src_[1024]; for (int i = 0; i < n; i++) src_[i] = {ops.rd(a, 'b32')}; "
        f"LOOP(int l_ = i & 31, s0_ = i - l_, g_ = l_ >> 2, t_ = l_ & 3; uint32_t o_ = 0; "
        f"for (int k_ = 0; k_ < 2; k_++) {{ int r_ = s0_ + 4 * (2 * t_ + k_) + (g_ >> 1); "
        f"if (r_ > n - 1) r_ = n - 1; "
        f"o_ |= ((src_[r_] >> (16 * (g_ & 1))) & 0xFFFFu) << (16 * k_); }} "
        f"{ops.wr(d, 'b32', 'o_')}); }}")
