"""``mma.sync.aligned`` (warp-level matrix multiply-accumulate with the ISA's per-lane
fragments, :mod:`mma_frag`): m16n8k16 and m16n8k8 on ``.f16``/``.bf16`` (``.f16`` or
``.f32`` accumulators for f16, ``.f32`` for bf16), m16n8k8 and m16n8k4 on ``.tf32``,
m16n8k32 and m16n8k16 on ``.s8``/``.u8`` (mixed signedness allowed, ``.s32`` accumulator,
``.satfinite``), m8n8k4 on ``.f64``; A row-major, B column-major (``.row.col``), as the ISA
requires of these shapes.  Arithmetic as WMMA's (:mod:`wmma_frag`); warp-collective.
"""

from __future__ import annotations

from .decode import Ins, op
from .mma_frag import SHAPES, mma_frag
from .ops_wmma import _regs, mma_binder


def mma_form(ins: Ins):
    """(register lists of D, A, B, C; fragments of A, B, C, D; input type; D type; satfinite)
    of an ``mma`` instruction (a PtxError for a form outside these)."""
    ins.only({"sync", "aligned", "row", "col", "satfinite", "rn", "tf32", *SHAPES})
    shapes = [m for m in ins.mods if m in SHAPES]
    if len(shapes) != 1 or [m for m in ins.mods if m in ("row", "col")] != ["row", "col"]:
        raise ins.fail("mma.sync needs one shape and .row.col")
    t = ins.types
    if "tf32" in ins.flags and t == ["f32", "f32"]:
        ta = tb = "tf32"
        tc = td = "f32"
    elif len(t) == 4:
        td, ta, tb, tc = t
    else:
        raise ins.fail("mma.sync needs .dtype.atype.btype.ctype")
    ints = {"s8", "u8"}
    if (ta != tb and not {ta, tb} <= ints) or (td != tc and ta != "f16") or \
            ("satfinite" in ins.flags) != (td == "s32" and "satfinite" in ins.flags):
        raise ins.fail(f"no mma.sync .{td}.{ta}.{tb}.{tc}")
    if (ta in ints) != (td == "s32") or (ta in ("bf16", "tf32") and td != "f32") or \
            (ta == "f64") != (td == "f64") or ("rn" in ins.flags and ta != "f64"):
        raise ins.fail(f"no mma.sync .{td}.{ta}.{tb}.{tc}")
    fa, fb, fc, fd = (mma_frag(k, shapes[0], e) for k, e in (("a", ta), ("b", tb), ("c", tc),
                                                             ("d", td)))
    if fa is None or fb is None or fc is None or fd is None:
        raise ins.fail(f"no mma.sync .{ta} of shape {shapes[0]}")
    ins.nargs(4)
    frags = (fa, fb, fc, fd)
    regs = [_regs(ins, ins.args[k], f.nregs) for k, f in enumerate((fd, fa, fb, fc))]
    return regs, frags, ta, td, "satfinite" in ins.flags


@op("mma")
def dec_mma(ins: Ins):
    """Decoder of ``mma`` (see the module docstring)."""
    regs, frags, ta, td, sat = mma_form(ins)
    return mma_binder(regs, frags, ta, td, sat)
