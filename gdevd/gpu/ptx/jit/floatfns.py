"""Translation of the float functions: sqrt, rsqrt, rcp, ex2, lg2, sin, cos, tanh.

Exact forms are correctly rounded (like numpy; directed modes through double).  ``.approx``
forms call ``approx.h``, which repeats :mod:`gdevd.gpu.ptx.approx` operation for
operation, so both engines return the same hardware-like bits.
"""

from __future__ import annotations

from .arith import ROUND, _float_t, _rmode, fpost, only, tr

# (base, type) -> the C function of the .approx form (ex2 ... tanh are always .approx)
APPROX = {("ex2", "f32"): "ax_ex2", ("lg2", "f32"): "ax_lg2", ("sin", "f32"): "ax_sin",
          ("cos", "f32"): "ax_cos", ("tanh", "f32"): "ax_tanh", ("rcp", "f32"): "ax_rcp",
          ("sqrt", "f32"): "ax_sqrt", ("rsqrt", "f32"): "ax_rsqrtf",
          ("rsqrt", "f64"): "ax_rsqrt", ("rcp", "f64"): "ax_rcp_f64"}


def _exact(ins, t: str):
    """The C of an exactly rounded sqrt/rsqrt/rcp."""
    f = t == "f32"
    sq = "sqrtf" if f else "sqrt"
    one = "1.0f" if f else "1.0"
    mode = _rmode(ins)
    if mode and f and ins.base in ("sqrt", "rcp"):
        inner = "sqrt((double)({p}))" if ins.base == "sqrt" else "(1.0 / (double)({p}))"
        return lambda p: f"rnd_f32({inner.format(p=p)}, {mode})"
    if mode and ins.base in ("sqrt", "rcp"):
        return (lambda p: f"dir_f64(DIR_SQRT, {p}, 0.0, {mode})") if ins.base == "sqrt" else \
            (lambda p: f"dir_f64(DIR_DIV, 1.0, {p}, {mode})")
    if ins.base == "sqrt":
        return lambda p: f"{sq}({p})"
    if ins.base == "rsqrt":
        return lambda p: f"({one} / {sq}({p}))"
    return lambda p: f"({one} / ({p}))"


@tr("sqrt", "rsqrt", "rcp", "ex2", "lg2", "sin", "cos", "tanh")
def t_float_fn(ins, ops) -> str:
    """One-operand float functions, .ftz applied around them (see the module docstring)."""
    t = _float_t(ins.type())
    only(ins, set(ROUND) | {"ftz", "approx", "full"})
    d, a = ins.args[:2]
    exact_ok = ins.base in ("sqrt", "rsqrt", "rcp") and "approx" not in ins.flags
    name = None if exact_ok else APPROX.get((ins.base, t))
    if name is None and not exact_ok:
        raise ValueError(f"{ins.base}.{t}")
    fn = _exact(ins, t) if name is None else (lambda p: f"{name}({p})")
    return ops.wr(d, t, fpost(ins, t, fn, ops.rd(a, t)))
