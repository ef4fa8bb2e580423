"""Translation of texture fetches (``tex``, ``tex.level``, ``tex.grad``, ``tld4``, see
``ops_tex.py``): one call per lane of ``tex_fetch_lod`` or ``tex_gather`` (tex.h, texmip.h),
the interpreter's sampler in C, on the launch's snapshot of its context's texture table; a
handle not in it faults with ``F_TEX``."""

from __future__ import annotations

from ...texsample import GEOMETRIES
from ..ops_tex import _COORDS, _RESULTS, _operands, _tld4_operands
from .arith import tr
from .operands import Unsupported

_READ = {"f32": "U2F(o_[{k}])", "s32": "(int32_t)o_[{k}]", "u32": "o_[{k}]"}


def _checked(parse, ins):
    try:
        return parse(ins)
    except Exception as exc:    # a PtxError: the interpreter rejected it at load already
        raise Unsupported(f"{ins.base}: {exc}") from exc


def _words(ops, coords, t_crd: str, geom: str) -> str:
    """The four coordinate words in operand order (a layer read as .s32)."""
    layered = GEOMETRIES[geom][1]
    cs = [f"F2U({ops.rd(c, 'f32')})" if t_crd == "f32" and not (layered and k == 0) else
          f"(uint32_t){ops.rd(c, 's32')}" for k, c in enumerate(coords)]
    return ", ".join(cs + ["0u"] * (4 - len(cs)))


def _statement(ins, ops, dests, obj, t_res: str, words: str, call: str) -> tuple[str, str]:
    writes = " ".join(ops.wr(d, t_res, _READ[t_res].format(k=k)) for k, d in enumerate(dests))
    return "ordered", (
        f"{{ uint32_t o_[4], w_[4] = {{{words}}}; "
        f"const struct jtex *t_ = tex_find(c, {ops.rd(obj, 'u64')}); "
        f"if (!t_) {{ c->fault_va = 0; c->fault_kind = F_TEX; FAULT({ins.line}); }} "
        f"if (!{call}) FAULT({ins.line}); {writes} }}")


@tr("tex")
def t_tex(ins, ops) -> tuple[str, str]:
    """tex[.level|.grad].{1d,2d,3d,a1d,a2d,cube,acube}.v4.{f32,s32,u32}.{s32,f32}: a
    statement for lane i."""
    dests, obj, coords, geom, mode, lods = _checked(_operands, ins)
    if len(ins.types) != 2 or ins.types[0] not in _RESULTS or ins.types[1] not in _COORDS:
        raise Unsupported("tex types")
    t_res, t_crd = ins.types
    g = list(GEOMETRIES).index(geom)
    fs = [ops.rd(o, "f32") for o in lods]
    if mode == "level":
        lod = fs[0]
    elif mode == "grad":
        half = len(fs) // 2
        lod = (f"tex_grad_lod(t_, {g}, (const float[3]){{{', '.join(fs[:half])}}}, "
               f"(const float[3]){{{', '.join(fs[half:])}}})")
    else:
        lod = "0.0f"
    call = f"tex_fetch_lod(c, t_, {int(t_crd == 's32')}, {g}, w_, {lod}, o_)"
    return _statement(ins, ops, dests, obj, t_res, _words(ops, coords, t_crd, geom), call)


@tr("tld4")
def t_tld4(ins, ops) -> tuple[str, str]:
    """tld4.{r,g,b,a}.{2d,a2d}.v4.{f32,s32,u32}.f32: a statement for lane i."""
    dests, obj, coords, geom, comp = _checked(_tld4_operands, ins)
    call = f"tex_gather(c, t_, {list(GEOMETRIES).index(geom)}, w_, {comp}, o_)"
    return _statement(ins, ops, dests, obj, ins.types[0], _words(ops, coords, "f32", geom),
                      call)
