"""Translation of carry chains and the rarer bit instructions to C.

Carry chains (``add.cc``, ``addc``, ``sub.cc``, ``subc``, ``mad.lo.cc``, ``madc``) keep the
carry flag per lane in ``c->cc``, as the interpreter keeps ``%%cc``: the adder's carry, so
``sub`` sets it when nothing is borrowed (see :mod:`gdevd.gpu.ptx.ops_int`).  ``brev``,
``bfind``, signed ``bfe``, ``sad`` and ``lop3`` follow :mod:`gdevd.gpu.ptx.ops_bits` and
:mod:`gdevd.gpu.ptx.ops_int` bit for bit.
"""

from __future__ import annotations

from .arith import TRANSLATORS, mul_hi, only, tr, wrap
from .operands import CT, UT, Unsupported, is_s, width

_plain_addsub, _plain_mad = TRANSLATORS["add"], TRANSLATORS["mad"]


def _carry_types(t: str) -> str:
    if t not in ("u32", "s32", "u64", "s64"):
        raise Unsupported(f"carry chain on .{t}")
    return "u" + t[1:]


@tr("add", "sub", "addc", "subc")
def t_addsub(ins, ops) -> str:
    """add/sub (plain ones as arith.py), add.cc/sub.cc/addc/subc with the lane's CF."""
    if ins.base in ("add", "sub") and "cc" not in ins.flags:
        return _plain_addsub(ins, ops)
    only(ins, {"cc"})
    ut = _carry_types(ins.type())
    d, a, b = ins.args[:3]
    x, y = ops.rd(a, ut), ops.rd(b, ut)
    chained = ins.base.endswith("c")
    cin = "(" + CT[ut] + ")c->cc[i]" if chained else "0"
    if ins.base.startswith("sub"):   # x + ~y + CF (sub.cc: CF = 1), as ops_int._carry
        cin = cin if chained else "1"
        r, cout = "x_ - y_ - (1 - k_)", "!((x_ < y_) | ((x_ == y_) & (k_ == 0)))"
    else:
        r, cout = "x_ + y_ + k_", "(r_ < x_) | ((r_ == x_) & (k_ == 1))"
    cc = "c->cc[i] = (uint8_t)(" + cout + ");" if "cc" in ins.flags else ""
    return (f"{{ {CT[ut]} x_ = {x}, y_ = {y}, k_ = {cin}; {CT[ut]} r_ = ({CT[ut]})({r}); "
            f"{ops.wr(d, ut, 'r_')} {cc} }}")


@tr("mad", "madc")
def t_mad_carry(ins, ops) -> str:
    """mad (plain ones as arith.py), mad.lo.cc and madc.{lo,hi}[.cc]."""
    if ins.base == "mad" and "cc" not in ins.flags:
        return _plain_mad(ins, ops)
    only(ins, {"lo", "hi", "cc"})
    t = ins.type()
    ut = _carry_types(t)
    d, a, b, c = ins.args[:4]
    x, y = ops.rd(a, t), ops.rd(b, t)
    prod = mul_hi(t, x, y) if "hi" in ins.flags else wrap(lambda p, q: f"{p} * {q}", t, x, y)
    cin = ""
    if ins.base == "madc":
        cin = f"{CT[ut]} k_ = c->cc[i]; {CT[ut]} s_ = r_ + k_; cout_ |= s_ < r_; r_ = s_;"
    cc = "c->cc[i] = (uint8_t)cout_;" if "cc" in ins.flags else ""
    return (f"{{ {CT[ut]} p_ = ({CT[ut]})({prod}), z_ = {ops.rd(c, ut)}; "
            f"{CT[ut]} r_ = p_ + z_; int cout_ = r_ < p_; {cin} {ops.wr(d, ut, 'r_')} {cc} }}")


@tr("brev")
def t_brev(ins, ops) -> str:
    """Bit reversal of 32- or 64-bit values."""
    t = ins.type()
    w = width(t)
    if w not in (4, 8):
        raise Unsupported(f"brev.{t}")
    return ops.wr(ins.args[0], t, f"brev{8 * w}(({UT[w]}){ops.rd(ins.args[1], t)})")


@tr("bmsk")
def t_bmsk(ins, ops) -> str:
    """sm_70's bit mask (gdevd/gpu/ptx/ops_bits.py ``bmsk``)."""
    only(ins, {"clamp", "wrap"})
    clamp = "clamp" in ins.flags
    a, b = ops.rd(ins.args[1], "u32"), ops.rd(ins.args[2], "u32")
    over = "a1_ + b1_ >= 32" + (" || a_ >= 32 || b_ >= 32" if clamp else "")
    m0 = "a_ >= 32 ? 0u : 0xFFFFFFFFu << a1_" if clamp else "0xFFFFFFFFu << a1_"
    return ops.wr(ins.args[0], "b32", f"__extension__({{ uint32_t a_ = {a}, b_ = {b}, "
                  f"a1_ = a_ & 31, b1_ = b_ & 31; uint32_t m0_ = {m0}; uint32_t m1_ = ({over}) "
                  f"? 0u : b1_ == 0 ? 0xFFFFFFFFu : 0xFFFFFFFFu << (a1_ + b1_); m0_ & ~m1_; }})")


@tr("bfind")
def t_bfind(ins, ops) -> str:
    """Most significant non-sign bit, 0xffffffff if none (.shiftamt: counted from the top)."""
    only(ins, {"shiftamt"})
    t = ins.type()
    w = width(t)
    bits = 8 * w
    x = ops.rd(ins.args[1], t)
    v = f"({UT[w]})({x} < 0 ? ~{x} : {x})" if is_s(t) else f"({UT[w]}){x}"
    pos = f"({bits - 1} - z_)"
    r = f"(uint32_t)({bits - 1} - {pos})" if "shiftamt" in ins.flags else f"(uint32_t){pos}"
    return ops.wr(ins.args[0], "u32", f"__extension__({{ uint64_t v_ = {v}; int z_ = v_ ? "
                  f"__builtin_clzll(v_) - {64 - bits} : {bits}; z_ == {bits} ? 0xFFFFFFFFu "
                  f": {r}; }})")


@tr("bfe")
def t_bfe(ins, ops) -> str:
    """Bit-field extract, signed types sign-extended from bit min(pos+len-1, msb)."""
    t = ins.type()
    d, a, b, c = ins.args[:4]
    bits = 8 * width(t)
    x = f"(uint64_t)({UT[bits // 8]}){ops.rd(a, t)}"
    pos, ln = ops.rd(b, "u32"), ops.rd(c, "u32")
    head = (f"uint64_t p_ = {pos} & 0xFF, l_ = {ln} & 0xFF, u_ = {x}; "
            f"uint64_t s_ = p_ >= {bits} ? 0 : u_ >> (p_ > 63 ? 63 : p_); ")
    if not is_s(t):
        return ops.wr(d, t, f"__extension__({{ {head}uint64_t m_ = l_ >= 64 ? ~0ull : "
                      f"(1ull << l_) - 1; ({CT[t]})(s_ & m_); }})")
    sx = f"(int64_t)({CT[t]})u_"
    return ops.wr(d, t, f"__extension__({{ {head}int64_t msb_ = (int64_t)(p_ + l_) - 1; "
                  f"if (msb_ > {bits - 1}) msb_ = {bits - 1}; int64_t sb_ = ({sx} >> "
                  f"(msb_ < 0 ? 0 : msb_)) & 1; int64_t v_ = msb_ - (int64_t)p_ + 1; "
                  f"v_ = v_ < 0 ? 0 : v_ > 63 ? 63 : v_; uint64_t vm_ = (1ull << v_) - 1; "
                  f"uint64_t f_ = (s_ & vm_) | (sb_ ? ~vm_ : 0); ({CT[t]})(l_ ? f_ : 0); }})")


@tr("sad")
def t_sad(ins, ops) -> str:
    """Sum of absolute difference: |a - b| + c (wrapping)."""
    t = ins.type()
    d, a, b, c = ins.args[:4]
    x, y, z = ops.rd(a, t), ops.rd(b, t), ops.rd(c, t)
    diff = f"({x} > {y} ? {wrap(lambda p, q: f'{p} - {q}', t, x, y)} : " \
           f"{wrap(lambda p, q: f'{p} - {q}', t, y, x)})"
    return ops.wr(d, t, wrap(lambda p, q: f"{p} + {q}", t, diff, z))


@tr("lop3")
def t_lop3(ins, ops) -> str:
    """Three-input logic by an immediate truth table."""
    d, a, b, c, lut = ins.args[:5]
    table = int(lut.value) & 0xFF
    terms = [f"({'x_' if k & 4 else '~x_'} & {'y_' if k & 2 else '~y_'} & "
             f"{'z_' if k & 1 else '~z_'})" for k in range(8) if table >> k & 1]
    return ops.wr(d, "b32", f"__extension__({{ uint32_t x_ = {ops.rd(a, 'b32')}, y_ = "
                  f"{ops.rd(b, 'b32')}, z_ = {ops.rd(c, 'b32')}; "
                  f"(uint32_t)({' | '.join(terms) or '0'}); }})")


@tr("mul24", "mad24")
def t_mul24(ins, ops) -> str:
    """mul24/mad24.{lo,hi}: the 48-bit product of the low 24 bits (sign-extended for .s32)."""
    only(ins, {"lo", "hi"})
    t = ins.type()
    if t not in ("s32", "u32"):
        raise Unsupported(f"mul24.{t}")
    x, y = ops.rd(ins.args[1], t), ops.rd(ins.args[2], t)

    def i24(v: str) -> str:
        m = f"((int64_t)({v}) & 0xFFFFFF)"
        return f"({m} - (({m} & 0x800000) ? 0x1000000 : 0))" if t == "s32" else m
    shift = " >> 16" if "hi" in ins.flags else ""
    p = f"(({CT[t]})(uint32_t)(uint64_t)(({i24(x)} * {i24(y)}){shift}))"
    if ins.base == "mad24":
        p = wrap(lambda q, r: f"{q} + {r}", t, p, ops.rd(ins.args[3], t))
    return ops.wr(ins.args[0], t, p)


@tr("dp4a", "dp2a")
def t_dp(ins, ops) -> str:
    """dp4a (four 8x8-bit products) and dp2a.{lo,hi} (two 16x8-bit) added to c, 32 bits."""
    if len(ins.types) != 2:
        raise Unsupported("dp types")
    only(ins, {"lo", "hi"})
    ta, tb = ins.types
    rt = "s32" if "s32" in (ta, tb) else "u32"
    d, a, b, c = ins.args[:4]

    def lane(v: str, t: str, w: int, shift: int) -> str:
        x = f"(int64_t)(({v} >> {shift}) & {(1 << w) - 1:#x}u)"
        return f"({x} - ({x} >= {1 << (w - 1)} ? {1 << w} : 0))" if t == "s32" else x
    if ins.base == "dp4a":
        pairs = [(lane("a_", ta, 8, 8 * k), lane("b_", tb, 8, 8 * k)) for k in range(4)]
    else:
        b0 = 0 if "lo" in ins.flags else 16
        pairs = [(lane("a_", ta, 16, 16 * k), lane("b_", tb, 8, b0 + 8 * k)) for k in range(2)]
    acc = " + ".join(f"{x} * {y}" for x, y in pairs)
    return (f"{{ uint32_t a_ = (uint32_t){ops.rd(a, ta)}, b_ = (uint32_t){ops.rd(b, tb)}; "
            f"uint64_t r_ = (uint64_t)(int64_t){ops.rd(c, rt)} + (uint64_t)({acc}); "
            f"{ops.wr(d, rt, f'({CT[rt]})(uint32_t)r_')} }}")
