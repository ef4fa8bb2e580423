"""Translation of texture fetches (``tex``, see ``ops_tex.py``): one call per lane of
``tex_fetch`` (tex.h), the interpreter's sampler in C, on the launch's snapshot of its
context's texture table; a handle not in it faults with ``F_TEX``."""

from __future__ import annotations

from ...texsample import GEOMETRIES
from ..ops_tex import _COORDS, _RESULTS, _operands
from .arith import tr
from .operands import Unsupported

_READ = {"f32": "U2F(o_[{k}])", "s32": "(int32_t)o_[{k}]", "u32": "o_[{k}]"}


@tr("tex")
def t_tex(ins, ops) -> tuple[str, str]:
    """tex.{1d,2d,3d,a1d,a2d,cube,acube}.v4.{f32,s32,u32}.{s32,f32}: a statement for lane i
    (the coordinate words in operand order, a layer read as .s32)."""
    try:
        dests, obj, coords, geom = _operands(ins)
    except Exception as exc:    # a PtxError: the interpreter rejected it at load already
        raise Unsupported(f"tex: {exc}") from exc
    if len(ins.types) != 2 or ins.types[0] not in _RESULTS or ins.types[1] not in _COORDS:
        raise Unsupported("tex types")
    t_res, t_crd = ins.types
    layered = GEOMETRIES[geom][1]
    cs = [f"F2U({ops.rd(c, 'f32')})" if t_crd == "f32" and not (layered and k == 0) else
          f"(uint32_t){ops.rd(c, 's32')}" for k, c in enumerate(coords)]
    cs += ["0u"] * (4 - len(cs))
    writes = " ".join(ops.wr(d, t_res, _READ[t_res].format(k=k)) for k, d in enumerate(dests))
    return "ordered", (
        f"{{ uint32_t o_[4], w_[4] = {{{', '.join(cs)}}}; "
        f"const struct jtex *t_ = tex_find(c, {ops.rd(obj, 'u64')}); "
        f"if (!t_) {{ c->fault_va = 0; c->fault_kind = F_TEX; FAULT({ins.line}); }} "
        f"if (!tex_fetch(c, t_, {int(t_crd == 's32')}, {list(GEOMETRIES).index(geom)}, w_, o_)) "
        f"FAULT({ins.line}); {writes} }}")
