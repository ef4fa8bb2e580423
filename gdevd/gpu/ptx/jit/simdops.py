"""Translation of the packed SIMD ("video") instructions and ``fns`` to C.

``vop4``/``vop2.dtype.atype.btype{.sat|.add} d, a, b, c`` for vadd, vsub, vavrg, vabsdiff,
vmin, vmax and ``vset{2,4}.atype.btype.cmp``, lane by lane as
:mod:`gdevd.gpu.ptx.ops_simd`: each byte or half-word sign- or zero-extended to 64 bits,
computed exactly, clamped to the destination lane's range with ``.sat``, then either
packed back or, with ``.add``, summed with ``c`` (nvcc's ``__vsadu4``, ``__vabsdiffu4``).
"""

from __future__ import annotations

from .arith import only, tr
from .operands import Unsupported

_OPS = {"vadd": "x_ + y_", "vsub": "x_ - y_", "vavrg": "(x_ + y_ + 1) >> 1",
        "vabsdiff": "(x_ > y_ ? x_ - y_ : y_ - x_)", "vmin": "(x_ < y_ ? x_ : y_)",
        "vmax": "(x_ > y_ ? x_ : y_)"}
_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _lane(var: str, src: str, width: int, signed: bool) -> str:
    mask = (1 << width) - 1
    x = f"int64_t {var} = (int64_t)(({src} >> ({width} * q_)) & {mask:#x}u);"
    if signed:
        x += f" if ({var} >> {width - 1}) {var} -= {1 << width}ll;"
    return x


@tr(*(n + s for n in [*_OPS, "vset"] for s in "24"))
def t_simd(ins, ops) -> str:
    """Every vop2/vop4 form the interpreter decodes (lane masks and selectors excluded)."""
    name, count = ins.base[:-1], int(ins.base[-1])
    width = 32 // count
    types = (["u32"] if name == "vset" else []) + list(ins.types)
    if len(types) != 3:
        raise Unsupported(f"{ins.base} types")
    dt, at, bt = types
    if name == "vset":
        cmps = [m for m in ins.mods if m in _CMP]
        if len(cmps) != 1:
            raise Unsupported("vset comparison")
        only(ins, {cmps[0], "add"})
        expr = f"(int64_t)(x_ {_CMP[cmps[0]]} y_)"
    else:
        only(ins, {"sat", "add"})
        expr = _OPS[name]
    lo, hi = ((-(1 << width - 1), (1 << width - 1) - 1) if dt[0] == "s" else (0, (1 << width) - 1))
    sat = f"r_ = r_ < {lo}ll ? {lo}ll : r_ > {hi}ll ? {hi}ll : r_;" if "sat" in ins.flags else ""
    if "add" in ins.flags:
        use, result = "t_ += r_;", "(uint32_t)t_"
    else:
        use, result = f"p_ |= ((uint32_t)r_ & {(1 << width) - 1:#x}u) << ({width} * q_);", "p_"
    d, a, b, c = ins.args[:4]
    return (f"{{ uint32_t a_ = {ops.rd(a, 'b32')}, b_ = {ops.rd(b, 'b32')}, p_ = 0; "
            f"int64_t t_ = (int64_t)(uint32_t){ops.rd(c, 'b32')}; "
            f"for (int q_ = 0; q_ < {count}; q_++) {{ {_lane('x_', 'a_', width, at[0] == 's')} "
            f"{_lane('y_', 'b_', width, bt[0] == 's')} int64_t r_ = {expr}; {sat} {use} }} "
            f"{ops.wr(d, 'b32', result)} }}")


@tr("fns")
def t_fns(ins, ops) -> str:
    """fns.b32 d, mask, base, offset: the bit position ``offset`` set bits from ``base``
    (forward for a positive offset, backward for a negative one; 0: base itself if set),
    0xffffffff if there is none, as ``ops_simd.dec_fns``."""
    d, m, b, o = ins.args[:4]
    return (f"{{ uint32_t m_ = {ops.rd(m, 'b32')}; int64_t b_ = {ops.rd(b, 'u32')} & 31, "
            f"o_ = (int32_t){ops.rd(o, 's32')}, r_ = -1; "
            f"if (o_ == 0) {{ if ((m_ >> b_) & 1) r_ = b_; }} else {{ "
            f"int64_t s_ = o_ > 0 ? 1 : -1, n_ = (o_ > 0 ? o_ : -o_) - 1, p_ = b_; "
            f"for (int q_ = 0; q_ < 32 && p_ >= 0 && p_ < 32; q_++, p_ += s_) "
            f"if ((m_ >> p_) & 1) {{ if (n_ == 0) {{ r_ = p_; break; }} n_--; }} }} "
            f"{ops.wr(d, 'b32', '(uint32_t)r_')} }}")
