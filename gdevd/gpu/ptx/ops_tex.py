"""Texture fetches: ``tex.{1d,2d,3d,a1d,a2d,cube,acube}.v4.{f32,s32,u32}.{s32,f32} d,
[obj, {coords}]``.

The unified (bindless) form nvcc emits for texture objects: ``obj`` is a ``.u64`` register
holding a handle of the launching context's :class:`~gdevd.gpu.texture.TextureTable`, and
the four destination registers receive the texel (``texsample.fetch``).  Lanes may present
different handles; each distinct one is looked up once per step.  A handle the context does
not hold raises :class:`~gdevd.gpu.texture.TextureFault` (a kernel fault naming kernel and
line), as does a geometry the texture does not have.  The coordinate vector is the PTX
ISA's: ``{x}``, ``{x, y}``, ``{x, y, z, _}`` (3d, cube), ``{layer, x}`` (a1d), ``{layer, x,
y, _}`` (a2d), ``{layer, x, y, z}`` (acube), the layer an integer whatever the coordinate
type; cubemaps take .f32 coordinates only.  Texture references (``.texref`` symbols),
samplers, mipmap levels, gradients and ``tld4`` are rejected at load time.
"""

from __future__ import annotations

import numpy as np

from gdevd.gpu.texsample import GEOMETRIES, fetch
from gdevd.gpu.texture import TextureFault

from .decode import Ins, op, regs_of
from .ptxtypes import DTYPES
from .syntax import Group, Imm, Reg, Sink, Vec

# geometry -> coordinate operands (GEOMETRIES says which are sampled and whether a layer leads)
_GEOMETRY = {"1d": 1, "2d": 2, "3d": 4, "a1d": 2, "a2d": 4, "cube": 4, "acube": 4}
_RESULTS = ("f32", "s32", "u32")
_COORDS = ("s32", "f32")


def _operands(ins: Ins):
    """(destinations, handle register, coordinate operands, geometry) after validation."""
    geom = [g for g in _GEOMETRY if g in ins.flags]
    if len(geom) != 1:
        raise ins.fail("tex needs one geometry of .1d, .2d, .3d, .a1d, .a2d, .cube, .acube")
    ins.only({"v4", *_GEOMETRY})
    if "v4" not in ins.flags:
        raise ins.fail("tex needs .v4 destinations")
    ins.nargs(2)
    dests = regs_of(ins.args[0])
    if len(dests) != 4 or not all(isinstance(d, Reg | Sink) for d in dests):
        raise ins.fail("tex needs four destination registers")
    a = ins.args[1]
    if not (isinstance(a, Group) and len(a.items) == 2 and isinstance(a.items[1], Vec)):
        raise ins.fail("expected a texture operand [obj, {coords}] (texture references "
                       "and samplers are not supported)")
    obj, coords = a.items[0], list(a.items[1].items)
    if not isinstance(obj, Reg):
        raise ins.fail("the texture object must be a .u64 register (texture references "
                       "are not supported)")
    n = _GEOMETRY[geom[0]]
    if len(coords) != n:
        raise ins.fail(f"tex.{geom[0]} takes {n} coordinate(s)")
    if geom[0] in ("cube", "acube") and ins.types[1:] != ["f32"]:
        raise ins.fail(f"tex.{geom[0]} takes .f32 coordinates")
    return dests, obj, coords, geom[0]


@op("tex")
def dec_tex(ins: Ins):
    """Decoder of ``tex`` (see the module docstring)."""
    dests, obj, coords, geom = _operands(ins)
    if len(ins.types) != 2 or ins.types[0] not in _RESULTS or ins.types[1] not in _COORDS:
        raise ins.fail("tex needs a result type .f32/.s32/.u32 and a coordinate type "
                       ".s32/.f32")
    t_res, t_crd = ins.types
    if not all(isinstance(c, Reg | Imm) for c in coords):
        raise ins.fail("tex coordinates must be registers or immediates")
    integer = t_crd == "s32"
    dt = DTYPES[t_res]

    def bind(env):
        ws = [env.wr(d, t_res) for d in dests]
        rh = env.rd(obj, "u64")
        layered = GEOMETRIES[geom][1]
        rc = [env.rd(c, "s32" if layered and k == 0 else t_crd) for k, c in enumerate(coords)]
        mem, lanes_all = env.mem, env.lanes_all

        def run(idx):
            lanes = lanes_all if idx is None else idx
            n = lanes.size
            h = np.broadcast_to(np.asarray(rh(idx), np.uint64), (n,))
            cs = [np.broadcast_to(r(idx), (n,)) for r in rc]
            out = _fetch_all(mem, h, cs, integer, geom)
            vals = out.view(dt)
            for k, w in enumerate(ws):
                w(idx, vals[:, k])
        return run
    return bind


def _fetch_all(mem, handles: np.ndarray, coords: list[np.ndarray], integer: bool, geom: str):
    """(n, 4) uint32 texels, one table look-up per distinct handle among the lanes."""
    table = mem.textures
    if table is None:       # a launch without a table: every handle is unknown
        raise TextureFault("invalid texture object")
    first = handles[0]
    if (handles == first).all():
        return fetch(table.get(int(first)), mem.mmu, coords, integer, geom)
    out = np.empty((handles.size, 4), np.uint32)
    for hv in np.unique(handles):
        sel = handles == hv
        out[sel] = fetch(table.get(int(hv)), mem.mmu, [c[sel] for c in coords], integer,
                         geom)
    return out
