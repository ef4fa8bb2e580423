"""Translation of lane-local arithmetic to C: integer, bit, compare, convert, float.

Each translator takes ``(ins, ops)`` (a decoded :class:`~gdevd.gpu.ptx.decode.Ins` and the
kernel's :class:`~.operands.Operands`) and returns one C statement for lane ``i``.  The C
reproduces the interpreter's numpy semantics bit for bit: integer arithmetic wraps (done in
unsigned types, so C never overflows a signed type), f32 arithmetic is IEEE single, fma.f32
and directed rounding go through double and one rounding like the interpreter.
"""

from __future__ import annotations

from ..ops_cvt import nan_to_int
from .operands import CT, UT, Unsupported, is_f, is_s, width

ROUND = {"rn": 0, "rz": 1, "rm": 2, "rp": 3}
TRANSLATORS: dict = {}


def tr(*names: str):
    """Register the decorated function as the translator of the given base opcodes."""
    def deco(fn):
        for n in names:
            TRANSLATORS[n] = fn
        return fn
    return deco


def only(ins, allowed: set[str]) -> None:
    """Unsupported if the instruction carries a modifier outside ``allowed``."""
    bad = ins.flags - allowed
    if bad:
        raise Unsupported(f"modifier .{sorted(bad)[0]} of {ins.base}")


def _uw(t: str) -> str:
    return "uint64_t" if width(t) == 8 else "uint32_t"


def wrap(expr_fn, t: str, *xs: str) -> str:
    """``expr_fn`` over the operands as unsigned words, cast back to ``t`` (wrapping)."""
    uw = _uw(t)
    us = [f"({uw})({UT[width(t)]})({x})" for x in xs]
    return f"(({CT[t]})({UT[width(t)]})({expr_fn(*us)}))"


def _rmode(ins) -> int:
    r = [m for m in ins.flags if m in ROUND]
    return ROUND[r[0]] if r else 0


def fpost(ins, t: str, expr_fn, *xs: str) -> str:
    """A float result with the instruction's .ftz (inputs and output) and .sat."""
    ftz = "ftz" in ins.flags and t == "f32"
    if ftz:
        xs = tuple(f"ftzf({x})" for x in xs)
    r = expr_fn(*xs)
    if ftz:
        r = f"ftzf({r})"
    if "sat" in ins.flags:
        r = f"{'satf' if t == 'f32' else 'satd'}({r})"
    return r


def _float_t(t: str) -> str:
    if not is_f(t):
        raise Unsupported(f"float type .{t}")
    return t


@tr("add", "sub", "mul")
def t_arith(ins, ops) -> str:
    """add/sub/mul (integer .lo/.hi/.wide/.sat, float with rounding)."""
    t = ins.type()
    d, a, b = ins.args[0], ins.args[1], ins.args[2]
    sym = {"add": "+", "sub": "-", "mul": "*"}[ins.base]
    if t in ("f16x2", "bf16", "bf16x2"):
        raise Unsupported(f"{t} arithmetic")
    if is_f(t):
        only(ins, set(ROUND) | {"ftz", "sat"})
        x, y = ops.rd(a, t), ops.rd(b, t)
        mode = _rmode(ins)
        neg = "-" if ins.base == "sub" else ""
        if mode and t == "f64":
            op = "DIR_MUL" if ins.base == "mul" else "DIR_ADD"
            fn = lambda p, q: f"dir_f64({op}, {p}, {neg}({q}), {mode})"  # noqa: E731
        elif mode and t == "f32" and ins.base != "mul":   # the double sum may be inexact
            fn = lambda p, q: f"dir_f32_fma({p}, 1.0f, {neg}({q}), {mode})"  # noqa: E731
        elif mode and t in ("f16", "f32"):
            fn = lambda p, q: f"rnd_{t}((double){p} {sym} (double){q}, {mode})"  # noqa: E731
        else:
            fn = lambda p, q: f"({p} {sym} {q})"  # noqa: E731
        return ops.wr(d, t, fpost(ins, t, fn, x, y))
    only(ins, {"lo", "hi", "wide", "sat"})
    if ins.base == "mul":
        return ops.wr(*_mul(ins, ops, t, a, b))
    x, y = ops.rd(a, t), ops.rd(b, t)
    if "sat" in ins.flags:
        if t != "s32":
            raise Unsupported(".sat needs .s32")
        v = f"((int64_t){x} {sym} (int64_t){y})"
        return ops.wr(d, t, f"(int32_t)({v} > INT32_MAX ? INT32_MAX : {v} < INT32_MIN ? "
                      f"INT32_MIN : {v})")
    return ops.wr(d, t, wrap(lambda p, q: f"{p} {sym} {q}", t, x, y))


def _wide(t: str) -> str:
    return ("s" if is_s(t) else "u") + str(2 * 8 * width(t))


def _mul(ins, ops, t, a, b) -> tuple:
    """(dest, type, expr) of an integer multiply in the instruction's mode."""
    d = ins.args[0]
    x, y = ops.rd(a, t), ops.rd(b, t)
    if "wide" in ins.flags:
        wt = _wide(t)
        if width(t) > 4:
            raise Unsupported("mul.wide of 64-bit")
        return d, wt, wrap(lambda p, q: f"{p} * {q}", wt, f"({CT[wt]}){x}", f"({CT[wt]}){y}")
    if "hi" in ins.flags:
        return d, t, mul_hi(t, x, y)
    return d, t, wrap(lambda p, q: f"{p} * {q}", t, x, y)


def mul_hi(t: str, x: str, y: str) -> str:
    """High half of the full product of two type-``t`` integers."""
    w = width(t)
    if w == 8:
        big = "__int128" if is_s(t) else "unsigned __int128"
        return f"(({CT[t]})((({big}){x} * ({big}){y}) >> 64))"
    big = "int64_t" if is_s(t) else "uint64_t"
    return f"(({CT[t]})((({big}){x} * ({big}){y}) >> {8 * w}))"


@tr("mad")
def t_mad(ins, ops) -> str:
    """mad (integer .lo/.hi/.wide, float = fma)."""
    t = ins.type()
    if is_f(t):
        return t_fma(ins, ops)
    only(ins, {"lo", "hi", "wide"})
    d, a, b, c = ins.args[:4]
    if "wide" in ins.flags:
        _, wt, prod = _mul(ins, ops, t, a, b)
        return ops.wr(d, wt, wrap(lambda p, q: f"{p} + {q}", wt, prod, ops.rd(c, wt)))
    _, _, prod = _mul(ins, ops, t, a, b)
    return ops.wr(d, t, wrap(lambda p, q: f"{p} + {q}", t, prod, ops.rd(c, t)))


@tr("fma")
def t_fma(ins, ops) -> str:
    """fma/mad of f32 (fmaf; directed modes by fmaf in that host rounding mode) and f64
    (one rounding in every mode: approx.h)."""
    t = _float_t(ins.type())
    only(ins, set(ROUND) | {"ftz", "sat"})
    d, a, b, c = ins.args[:4]
    x, y, z = ops.rd(a, t), ops.rd(b, t), ops.rd(c, t)
    mode = _rmode(ins)
    if t == "f64":
        fn = lambda p, q, r: f"fma_dir({p}, {q}, {r}, {mode})" if mode else \
            f"fma_rn({p}, {q}, {r})"  # noqa: E731
    elif t == "f16":   # as the interpreter: the double value rounded once to f16
        fn = lambda p, q, r: f"((double){p} * (double){q} + (double){r})"  # noqa: E731
    elif not mode:
        fn = lambda p, q, r: f"fmaf({p}, {q}, {r})"  # noqa: E731
    else:
        fn = lambda p, q, r: f"dir_f32_fma({p}, {q}, {r}, {mode})"  # noqa: E731
    return ops.wr(d, t, fpost(ins, t, fn, x, y, z))


@tr("div", "rem")
def t_div(ins, ops) -> str:
    """Integer div/rem (x/0 and x%0 all ones, as the hardware) and float div."""
    t = ins.type()
    d, a, b = ins.args[:3]
    if is_f(t):
        only(ins, set(ROUND) | {"ftz", "approx", "full", "sat"})
        mode = _rmode(ins)
        x, y = ops.rd(a, t), ops.rd(b, t)
        if t == "f32" and ins.flags & {"approx", "full"}:
            f = "ax_div_approx" if "approx" in ins.flags else "ax_div_full"
            fn = lambda p, q: f"{f}({p}, {q})"  # noqa: E731
        elif mode and t == "f32":
            fn = lambda p, q: f"rnd_f32((double){p} / (double){q}, {mode})"  # noqa: E731
        elif mode and t == "f64":
            fn = lambda p, q: f"dir_f64(DIR_DIV, {p}, {q}, {mode})"  # noqa: E731
        else:
            fn = lambda p, q: f"({p} / {q})"  # noqa: E731
        return ops.wr(d, t, fpost(ins, t, fn, x, y))
    only(ins, set())
    if t not in CT or t == "pred" or is_f(t):
        raise Unsupported(f"div.{t}")
    x, y = ops.rd(a, t), ops.rd(b, t)
    ct = CT[t]
    if ins.base == "div":
        if is_s(t):
            e = f"({y} == 0 ? ({ct})-1 : {y} == -1 ? {wrap(lambda p: f'0 - {p}', t, x)} : " \
                f"({ct})({x} / {y}))"
        else:
            e = f"({y} == 0 ? ({ct})~({ct})0 : ({ct})({x} / {y}))"
    elif is_s(t):
        e = f"({y} == 0 ? ({ct})-1 : {y} == -1 ? ({ct})0 : ({ct})({x} % {y}))"
    else:
        e = f"({y} == 0 ? ({ct})~({ct})0 : ({ct})({x} % {y}))"
    return ops.wr(d, t, e)


@tr("abs", "neg")
def t_absneg(ins, ops) -> str:
    """abs/neg of integers (wrapping) and floats (sign bit; .ftz)."""
    t = ins.type()
    d, a = ins.args[:2]
    x = ops.rd(a, t)
    if is_f(t):
        only(ins, {"ftz"})
        f = ("fabsf" if t == "f32" else "fabs") if ins.base == "abs" else "-"
        return ops.wr(d, t, fpost(ins, t, lambda p: f"({f}({p}))", x))
    if ins.base == "neg":
        return ops.wr(d, t, wrap(lambda p: f"0 - {p}", t, x))
    return ops.wr(d, t, f"({x} < 0 ? {wrap(lambda p: f'0 - {p}', t, x)} : {x})")


@tr("min", "max")
def t_minmax(ins, ops) -> str:
    """min/max: integers; floats as fmin/fmax (a NaN yields the other) with -0.0 < +0.0."""
    t = ins.type()
    d, a, b = ins.args[:3]
    x, y = ops.rd(a, t), ops.rd(b, t)
    cmp = "<" if ins.base == "min" else ">"
    if is_f(t):
        only(ins, {"ftz", "NaN"})
        # a NaN operand: the other one (fmin/fmax); with .NaN: the NaN, a's first (numpy's
        # minimum/maximum, the interpreter's)
        nan = "isnan(a_) ? a_ : isnan(b_) ? b_" if "NaN" in ins.flags else \
            "isnan(b_) ? a_ : isnan(a_) ? b_"

        # of two zeros, +0.0 > -0.0: a tie takes b when b's sign is the one min/max wants
        tie = "signbit(b_)" if ins.base == "min" else "!signbit(b_)"

        def fn(p, q):
            return f"__extension__({{ {CT[t]} a_ = {p}, b_ = {q}; {nan} : " \
                   f"(b_ {cmp} a_ || (b_ == a_ && {tie}) ? b_ : a_); }})"
        return ops.wr(d, t, fpost(ins, t, fn, x, y))
    only(ins, {"relu"})
    e = f"__extension__({{ {CT[t]} a_ = {x}, b_ = {y}; b_ {cmp} a_ ? b_ : a_; }})"
    if "relu" in ins.flags:
        e = f"__extension__({{ {CT[t]} m_ = {e}; m_ < 0 ? ({CT[t]})0 : m_; }})"
    return ops.wr(d, t, e)


@tr("and", "or", "xor")
def t_logic(ins, ops) -> str:
    """Bitwise and/or/xor (predicates as 0/1)."""
    t = ins.type()
    d, a, b = ins.args[:3]
    sym = {"and": "&", "or": "|", "xor": "^"}[ins.base]
    return ops.wr(d, t, f"(({CT[t]})({ops.rd(a, t)} {sym} {ops.rd(b, t)}))")


@tr("not", "cnot")
def t_not(ins, ops) -> str:
    """not (bitwise; logical for predicates) and cnot."""
    t = ins.type()
    d, a = ins.args[:2]
    x = ops.rd(a, t)
    if ins.base == "cnot":
        return ops.wr(d, t, f"(({CT[t]})({x} == 0))")
    return ops.wr(d, t, f"(!{x})" if t == "pred" else f"(({CT[t]})~{x})")


@tr("shl", "shr")
def t_shift(ins, ops) -> str:
    """Shifts: amounts >= the width give 0 (shl, unsigned shr) or the sign (signed shr)."""
    t = ins.type()
    if t[0] == "b":
        t = "u" + t[1:]
    d, a, b = ins.args[:3]
    x, y = ops.rd(a, t), ops.rd(b, "u32")
    bits = 8 * width(t)
    if ins.base == "shl":
        e = f"({y} >= {bits} ? ({CT[t]})0 : " + wrap(lambda p: f"{p} << {y}", t, x) + ")"
    elif is_s(t):
        e = f"(({CT[t]})({x} >> ({y} >= {bits} ? {bits - 1} : {y})))"
    else:
        e = f"({y} >= {bits} ? ({CT[t]})0 : ({CT[t]})({x} >> {y}))"
    return ops.wr(d, t, e)


@tr("shf")
def t_shf(ins, ops) -> str:
    """Funnel shift of b:a by c (clamped to 32 or wrapped)."""
    d, a, b, c = ins.args[:4]
    x, y, z = ops.rd(a, "b32"), ops.rd(b, "b32"), ops.rd(c, "u32")
    amt = f"({z} > 32 ? 32 : {z})" if "clamp" in ins.flags else f"({z} & 31)"
    if a == b and "clamp" not in ins.flags:     # a rotation (the C compiler's rol/ror)
        left, right = ("<<", ">>") if "l" in ins.flags else (">>", "<<")
        return ops.wr(d, "b32", f"__extension__({{ uint32_t x_ = {x}, n_ = {amt}; "
                      f"(uint32_t)((x_ {left} n_) | (x_ {right} ((32u - n_) & 31u))); }})")
    v = f"(((uint64_t){y} << 32) | (uint64_t){x})"
    e = "((v_ << n_) >> 32)" if "l" in ins.flags else "(v_ >> n_)"
    return ops.wr(d, "b32", f"__extension__({{ uint64_t v_ = {v}, n_ = {amt}; "
                  f"(uint32_t){e}; }})")


PRMT_MODES = ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")     # bits.h's prmt_mode numbers


@tr("prmt")
def t_prmt(ins, ops) -> str:
    """Byte permute: the default mode, or one of the special modes."""
    d, a, b, c = ins.args[:4]
    args = f"{ops.rd(a, 'b32')}, {ops.rd(b, 'b32')}, {ops.rd(c, 'b32')}"
    modes = [m for m in PRMT_MODES if m in ins.flags]
    if modes:
        return ops.wr(d, "b32", f"prmt_mode({args}, {PRMT_MODES.index(modes[0])})")
    return ops.wr(d, "b32", f"prmt_default({args})")


@tr("popc", "clz")
def t_bits(ins, ops) -> str:
    """popc/clz (result u32)."""
    t = ins.type()
    d, a = ins.args[:2]
    w = width(t)
    x = f"(({UT[w]}){ops.rd(a, t)})"
    if ins.base == "popc":
        return ops.wr(d, "u32", f"((uint32_t)__builtin_popcountll({x}))")
    return ops.wr(d, "u32", f"__extension__({{ uint64_t v_ = {x}; v_ ? (uint32_t)"
                  f"(__builtin_clzll(v_) - {64 - 8 * w}) : {8 * w}u; }})")


_ICMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
         "lo": "<", "ls": "<=", "hi": ">", "hs": ">="}


def compare(ins, t: str, x: str, y: str) -> str:
    """C truth value of the instruction's comparison of x and y (interpreter semantics)."""
    if is_f(t):
        table = {"eq": "{a} == {b}", "ne": "({a} < {b} || {a} > {b})", "lt": "{a} < {b}",
                 "le": "{a} <= {b}", "gt": "{a} > {b}", "ge": "{a} >= {b}",
                 "equ": "!({a} < {b} || {a} > {b})", "neu": "{a} != {b}",
                 "ltu": "!({a} >= {b})", "leu": "!({a} > {b})", "gtu": "!({a} <= {b})",
                 "geu": "!({a} < {b})", "num": "!(isnan({a}) || isnan({b}))",
                 "nan": "(isnan({a}) || isnan({b}))"}
        found = [m for m in ins.mods if m in table]
        if len(found) != 1:
            raise Unsupported("comparison")
        return "(" + table[found[0]].format(a=x, b=y) + ")"
    found = [m for m in ins.mods if m in _ICMP]
    if len(found) != 1:
        raise Unsupported("comparison")
    return f"({x} {_ICMP[found[0]]} {y})"


_BOOL = {"and": "&&", "or": "||", "xor": "!="}


@tr("setp")
def t_setp(ins, ops) -> str:
    """setp with one or two destinations and an optional boolean combine."""
    from ..syntax import Pair, Sink
    t = ins.type()
    if t[0] == "b":
        t = "u" + t[1:]
    if t not in CT or t == "pred":
        raise Unsupported(f"setp.{t}")
    dst = ins.args[0]
    p, q = (dst.first, dst.second) if isinstance(dst, Pair) else (dst, Sink())
    x, y = ops.rd(ins.args[1], t), ops.rd(ins.args[2], t)
    if "ftz" in ins.flags and t == "f32":   # subnormal operands compare as zeros
        x, y = f"ftzf({x})", f"ftzf({y})"
    r = compare(ins, t, x, y)
    bops = [m for m in ins.mods if m in _BOOL]
    if bops:
        cv = ops.rd(ins.args[3], "pred")
        bo = _BOOL[bops[0]]
        first, second = f"((r_) {bo} (c_))", f"((!r_) {bo} (c_))"
        return "{{ int r_ = {}, c_ = {}; int p_ = {}, q_ = {}; {} {} }}".format(
            r, cv, first, second, ops.wr(p, "pred", "p_"), ops.wr(q, "pred", "q_"))
    return "{{ int r_ = {}; {} {} }}".format(r, ops.wr(p, "pred", "r_"), ops.wr(q, "pred", "!r_"))


def _bits_of_half(t: str) -> str:
    """b16 for f16: moved as bits, not through a float (which would quiet a signalling NaN)."""
    return "b16" if t == "f16" else t


@tr("selp")
def t_selp(ins, ops) -> str:
    """selp d, a, b, c: d = c ? a : b (an f16 moves as its bits)."""
    t = _bits_of_half(ins.type())
    d, a, b, c = ins.args[:4]
    return ops.wr(d, t, f"({ops.rd(c, 'pred')} ? {ops.rd(a, t)} : {ops.rd(b, t)})")


@tr("slct")
def t_slct(ins, ops) -> str:
    """slct.dtype.ctype d, a, b, c: d = c >= 0 ? a : b."""
    if len(ins.types) != 2:
        raise Unsupported("slct types")
    t, ct = ins.types
    d, a, b, c = ins.args[:4]
    return ops.wr(d, t, f"({ops.rd(c, ct)} >= 0 ? {ops.rd(a, t)} : {ops.rd(b, t)})")


@tr("copysign")
def t_copysign(ins, ops) -> str:
    """copysign d, a, b: |b| with the sign of a."""
    t = _float_t(ins.type())
    d, a, b = ins.args[:3]
    fn = "copysignf" if t == "f32" else "copysign"
    return ops.wr(d, t, f"{fn}({ops.rd(b, t)}, {ops.rd(a, t)})")


def _clamp_int(x: str, dst: str) -> str:
    w = width(dst)
    lo, hi = (-(1 << (8 * w - 1)), (1 << (8 * w - 1)) - 1) if is_s(dst) else (0, (1 << 8 * w) - 1)
    return f"__extension__({{ __int128 v_ = (__int128)({x}); ({CT[dst]})(v_ < (__int128)" \
           f"({lo}ll) ? ({lo}ll) : v_ > (__int128)({hi}ull) ? ({hi}ull) : v_); }})"


_IRND = {"rni": "rint", "rzi": "trunc", "rmi": "floor", "rpi": "ceil"}


@tr("cvt")
def t_cvt(ins, ops) -> str:
    """cvt between integer and float types (rounding, .sat, .ftz) as the interpreter."""
    if len(ins.types) != 2:
        raise Unsupported("cvt types")
    dst, st = ins.types
    width(dst)
    width(st)
    only(ins, set(_IRND) | set(ROUND) | {"sat", "ftz"})
    d, a = ins.args[:2]
    x = ops.rd(a, st)
    if st == "f32" and "ftz" in ins.flags:
        x = f"ftzf({x})"
    irnd = [_IRND[m] for m in ins.flags if m in _IRND]
    mode = _rmode(ins)
    sat = "sat" in ins.flags
    if dst == "f16":   # rounded once from the double value by the write (F2H)
        r = f"{irnd[0]}((double){x})" if is_f(st) and irnd else \
            f"rnd_f16((double){x}, {mode})" if is_f(st) and mode and st != "f16" else \
            f"((double){x})"
        return ops.wr(d, dst, f"satd(H2F(F2H({r})))" if sat else r)   # .sat after rounding
    if is_f(dst):
        if is_f(st) and irnd:
            r = f"(({CT[dst]}){irnd[0]}((double){x}))"
        elif mode and not is_f(st) and width(st) >= 4 and (width(st) == 8 or dst == "f32"):
            r = f"dir_{st[0] if st[0] != 'b' else 'u'}{8 * width(st)}_{dst}({x}, {mode})"
        elif dst == "f32" and (width(st) == 8 or not is_f(st)) and (mode or is_f(st)):
            r = f"rnd_f32((double){x}, {mode})"
        else:
            r = f"(({CT[dst]}){x})"
        if sat:
            r = f"{'satf' if dst == 'f32' else 'satd'}({r})"
        if dst == "f32" and "ftz" in ins.flags:
            r = f"ftzf({r})"
        return ops.wr(d, dst, r)
    if dst == "pred" or st == "pred":
        raise Unsupported("cvt of a predicate")
    if is_f(st):
        rnd = irnd[0] if irnd else "trunc"
        conv = f"f2{dst[0] if dst[0] != 'b' else 'u'}{8 * width(dst)}({rnd}((double)x_))"
        nan = nan_to_int(st, dst)
        if nan:   # a NaN's integer as the interpreter's (the hardware's)
            conv = f"(isnan(x_) ? ({CT[dst]}){nan:#x}ull : {conv})"
        return ops.wr(d, dst, f"__extension__({{ __auto_type x_ = {x}; {conv}; }})")
    if sat:
        return ops.wr(d, dst, _clamp_int(x, dst))
    return ops.wr(d, dst, f"(({CT[dst]}){x})")


@tr("testp")
def t_testp(ins, ops) -> str:
    """testp.{finite,infinite,number,notanumber,normal,subnormal}."""
    t = _float_t(ins.type())
    d, a = ins.args[:2]
    tests = {"finite": "isfinite(x_)", "infinite": "isinf(x_)", "number": "!isnan(x_)",
             "notanumber": "isnan(x_)", "normal": "(isnormal(x_) || x_ == 0)",
             "subnormal": "(fpclassify(x_) == FP_SUBNORMAL)"}
    kinds = [m for m in ins.flags if m in tests]
    if len(kinds) != 1:
        raise Unsupported("testp")
    return ops.wr(d, "pred", f"__extension__({{ {CT[t]} x_ = {ops.rd(a, t)}; "
                  f"{tests[kinds[0]]}; }})")




@tr("mov")
def t_mov(ins, ops) -> str:
    """mov of registers, immediates, specials and symbol addresses; vector pack/unpack."""
    from ..syntax import Vec
    t = _bits_of_half(ins.type())
    d, a = ins.args[:2]
    if isinstance(d, Vec) or isinstance(a, Vec):
        return _packing(ins, ops, t, d, a)
    return ops.wr(d, t, ops.rd(a, t))


def _packing(ins, ops, t: str, d, a) -> str:
    from ..syntax import Vec
    vec = d if isinstance(d, Vec) else a
    n, w = len(vec.items), width(t)
    if w % n or (w // n) not in UT:
        raise Unsupported("pack width")
    pt, bits = f"b{8 * w // n}", 8 * w // n
    if isinstance(a, Vec):
        parts = " | ".join(f"(({UT[w]}){ops.rd(x, pt)} << {bits * k})"
                           for k, x in enumerate(a.items))
        return ops.wr(d, f"b{8 * w}", f"(({UT[w]})({parts}))")
    writes = " ".join(ops.wr(x, pt, f"(({UT[w // n]})(v_ >> {bits * k}))")
                      for k, x in enumerate(d.items))
    return f"{{ {UT[w]} v_ = {ops.rd(a, f'b{8 * w}')}; {writes} }}"


@tr("bfi")
def t_bfi(ins, ops) -> str:
    """Bit-field insert: b with len bits at pos replaced by a's low bits (as ops_bits)."""
    t = ins.type()
    d, a, b, c, e = ins.args[:5]
    bits = 8 * width(t)
    x, y = ops.rd(a, t), ops.rd(b, t)
    pos, ln = ops.rd(c, "u32"), ops.rd(e, "u32")
    return ops.wr(d, t, f"__extension__({{ uint64_t p_ = {pos} & 0xFF, l_ = {ln} & 0xFF; "
                  f"if (l_ > {bits}) l_ = {bits}; uint64_t m_ = l_ >= 64 ? ~0ull : "
                  f"(1ull << l_) - 1; m_ = p_ >= {bits} ? 0 : m_ << (p_ > 63 ? 63 : p_); "
                  f"uint64_t r_ = ((uint64_t)({UT[bits // 8]}){y} & ~m_) | "
                  f"(((uint64_t)({UT[bits // 8]}){x} << (p_ > 63 ? 63 : p_)) & m_); "
                  f"({CT[t]})({UT[bits // 8]})r_; }})")


@tr("bfe")
def t_bfe(ins, ops) -> str:
    """Bit-field extract of unsigned types (signed forms stay on the interpreter)."""
    t = ins.type()
    if is_s(t):
        raise Unsupported("signed bfe")
    d, a, b, c = ins.args[:4]
    bits = 8 * width(t)
    x = f"(uint64_t)({UT[bits // 8]}){ops.rd(a, t)}"
    pos, ln = ops.rd(b, "u32"), ops.rd(c, "u32")
    return ops.wr(d, t, f"__extension__({{ uint64_t p_ = {pos} & 0xFF, l_ = {ln} & 0xFF; "
                  f"uint64_t s_ = p_ >= {bits} ? 0 : ({x}) >> (p_ > 63 ? 63 : p_); "
                  f"uint64_t m_ = l_ >= 64 ? ~0ull : (1ull << l_) - 1; ({CT[t]})(s_ & m_); }})")
