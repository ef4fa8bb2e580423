"""Translation of texture fetches (``tex``, see ``ops_tex.py``): one call per lane of
``tex_fetch`` (tex.h), the interpreter's sampler in C, on the launch's snapshot of its
context's texture table; a handle not in it faults with ``F_TEX``."""

from __future__ import annotations

from ..ops_tex import _COORDS, _RESULTS, _operands
from .arith import tr
from .operands import Unsupported

_READ = {"f32": "U2F(o_[{k}])", "s32": "(int32_t)o_[{k}]", "u32": "o_[{k}]"}


@tr("tex")
def t_tex(ins, ops) -> tuple[str, str]:
    """tex.{1d,2d}.v4.{f32,s32,u32}.{s32,f32}: a statement for lane i."""
    try:
        dests, obj, coords, dims = _operands(ins)
    except Exception as exc:    # a PtxError: the interpreter rejected it at load already
        raise Unsupported(f"tex: {exc}") from exc
    if len(ins.types) != 2 or ins.types[0] not in _RESULTS or ins.types[1] not in _COORDS:
        raise Unsupported("tex types")
    t_res, t_crd = ins.types
    if t_crd == "f32":
        cs = [f"F2U({ops.rd(c, 'f32')})" for c in coords]
    else:
        cs = [f"(uint32_t){ops.rd(c, 's32')}" for c in coords]
    cs += ["0u"] * (2 - len(cs))
    writes = " ".join(ops.wr(d, t_res, _READ[t_res].format(k=k)) for k, d in enumerate(dests))
    return "ordered", (
        f"{{ uint32_t o_[4]; const struct jtex *t_ = tex_find(c, {ops.rd(obj, 'u64')}); "
        f"if (!t_) {{ c->fault_va = 0; c->fault_kind = F_TEX; FAULT({ins.line}); }} "
        f"if (!tex_fetch(c, t_, {int(t_crd == 's32')}, {dims}, {cs[0]}, {cs[1]}, o_)) "
        f"FAULT({ins.line}); {writes} }}")
