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
type; cubemaps take .f32 coordinates only.

``tex.level`` adds a .f32 level-of-detail operand, ``tex.grad`` two gradient vectors
(``{dx}``, ``{dx, dy}`` or ``{dx, dy, dz, _}`` by geometry), both with .f32 coordinates;
``tld4.{r,g,b,a}.{2d,a2d}.v4.{f32,s32,u32}.f32`` gathers one component of the bilinear
footprint (``gdevd/gpu/texmip.py`` says how levels are chosen and blended).  Texture
references (``.texref`` symbols) and samplers are rejected at load time.
"""

from __future__ import annotations

import numpy as np

from gdevd.gpu import texmip
from gdevd.gpu.texsample import GEOMETRIES
from gdevd.gpu.texture import TextureFault

from .decode import Ins, op, regs_of
from .ptxtypes import DTYPES
from .syntax import Group, Imm, Reg, Sink, Vec

# geometry -> coordinate operands (GEOMETRIES says which are sampled and whether a layer leads)
_GEOMETRY = {"1d": 1, "2d": 2, "3d": 4, "a1d": 2, "a2d": 4, "cube": 4, "acube": 4}
_RESULTS = ("f32", "s32", "u32")
_COORDS = ("s32", "f32")


def _geometry(ins: Ins, allowed) -> str:
    geom = [g for g in allowed if g in ins.flags]
    if len(geom) != 1:
        raise ins.fail(f"{ins.base} needs one geometry of "
                       f"{', '.join('.' + g for g in allowed)}")
    return geom[0]


def _dests_and_texture(ins: Ins, geom: str):
    """(four destinations, handle register, coordinate operands) of ``d, [obj, {c}]``."""
    if "v4" not in ins.flags:
        raise ins.fail(f"{ins.base} needs .v4 destinations")
    dests = regs_of(ins.args[0])
    if len(dests) != 4 or not all(isinstance(d, Reg | Sink) for d in dests):
        raise ins.fail(f"{ins.base} needs four destination registers")
    a = ins.args[1]
    if not (isinstance(a, Group) and len(a.items) == 2 and isinstance(a.items[1], Vec)):
        raise ins.fail("expected a texture operand [obj, {coords}] (texture references "
                       "and samplers are not supported)")
    obj, coords = a.items[0], list(a.items[1].items)
    if not isinstance(obj, Reg):
        raise ins.fail("the texture object must be a .u64 register (texture references "
                       "are not supported)")
    n = _GEOMETRY[geom]
    if len(coords) != n:
        raise ins.fail(f"{ins.base}.{geom} takes {n} coordinate(s)")
    return dests, obj, coords


def _lod_operands(ins: Ins, mode: str | None, geom: str) -> list:
    """The LOD operand of .level, or the sampled gradient components of .grad (dPdx's then
    dPdy's); none for a plain tex."""
    ins.nargs({None: 2, "level": 3, "grad": 4}[mode])
    if mode is None:
        return []
    if ins.types[1:] != ["f32"]:
        raise ins.fail(f"tex.{mode} takes .f32 coordinates")
    if mode == "level":
        ops = [ins.args[2]]
    else:
        want = 1 if geom in ("1d", "a1d") else 2 if geom in ("2d", "a2d") else 4
        vecs = [regs_of(ins.args[k]) for k in (2, 3)]
        if any(len(v) != want for v in vecs):
            raise ins.fail(f"tex.grad.{geom} takes gradients of {want} component(s)")
        dims = GEOMETRIES[geom][0]
        ops = vecs[0][:dims] + vecs[1][:dims]
    if not all(isinstance(o, Reg | Imm) for o in ops):
        raise ins.fail(f"tex.{mode} operands must be registers or immediates")
    return ops


def _operands(ins: Ins):
    """(destinations, handle register, coordinate operands, geometry, LOD mode or None,
    LOD operands) after validation."""
    geom = _geometry(ins, _GEOMETRY)
    ins.only({"v4", "level", "grad", *_GEOMETRY})
    if {"level", "grad"} <= ins.flags:
        raise ins.fail("tex takes one of .level and .grad")
    mode = "level" if "level" in ins.flags else "grad" if "grad" in ins.flags else None
    dests, obj, coords = _dests_and_texture(ins, geom)
    if geom in ("cube", "acube") and ins.types[1:] != ["f32"]:
        raise ins.fail(f"tex.{geom} takes .f32 coordinates")
    return dests, obj, coords, geom, mode, _lod_operands(ins, mode, geom)


def _tld4_operands(ins: Ins):
    """(destinations, handle register, coordinate operands, geometry, component) of
    ``tld4.{r,g,b,a}.{2d,a2d}.v4.{f32,s32,u32}.f32``."""
    geom = _geometry(ins, ("2d", "a2d"))
    comp = [c for c in "rgba" if c in ins.flags]
    if len(comp) != 1:
        raise ins.fail("tld4 needs one component of .r, .g, .b, .a")
    ins.only({"v4", geom, comp[0]})
    if len(ins.types) != 2 or ins.types[0] not in _RESULTS or ins.types[1] != "f32":
        raise ins.fail("tld4 needs a result type .f32/.s32/.u32 and .f32 coordinates")
    ins.nargs(2)
    dests, obj, coords = _dests_and_texture(ins, geom)
    return dests, obj, coords, geom, "rgba".index(comp[0])


@op("tex")
def dec_tex(ins: Ins):
    """Decoder of ``tex`` (see the module docstring)."""
    dests, obj, coords, geom, mode, lods = _operands(ins)
    if len(ins.types) != 2 or ins.types[0] not in _RESULTS or ins.types[1] not in _COORDS:
        raise ins.fail("tex needs a result type .f32/.s32/.u32 and a coordinate type "
                       ".s32/.f32")
    t_res, t_crd = ins.types
    if not all(isinstance(c, Reg | Imm) for c in coords):
        raise ins.fail("tex coordinates must be registers or immediates")
    integer = t_crd == "s32"
    dims = GEOMETRIES[geom][0]

    def sample(tex, mmu, cs, extra):
        if mode == "grad":
            lod = texmip.grad_lod(tex, geom, extra[:dims], extra[dims:])
        else:
            lod = extra[0] if extra else None
        return texmip.fetch_lod(tex, mmu, cs, integer, geom, lod)
    return _binder(ins, dests, obj, coords, t_res, t_crd, geom, lods, sample)


@op("tld4")
def dec_tld4(ins: Ins):
    """Decoder of ``tld4`` (see the module docstring)."""
    dests, obj, coords, geom, comp = _tld4_operands(ins)
    if not all(isinstance(c, Reg | Imm) for c in coords):
        raise ins.fail("tld4 coordinates must be registers or immediates")

    def sample(tex, mmu, cs, extra):
        return texmip.gather(tex, mmu, cs, geom, comp)
    return _binder(ins, dests, obj, coords, ins.types[0], "f32", geom, [], sample)


def _binder(ins: Ins, dests, obj, coords, t_res: str, t_crd: str, geom: str, lods, sample):
    """The bind function of a texture instruction: read the handle, coordinates (a layer
    as .s32) and LOD operands (.f32) of the lanes, ``sample`` per handle, write the four
    words."""
    dt = DTYPES[t_res]

    def bind(env):
        ws = [env.wr(d, t_res) for d in dests]
        rh = env.rd(obj, "u64")
        layered = GEOMETRIES[geom][1]
        rc = [env.rd(c, "s32" if layered and k == 0 else t_crd) for k, c in enumerate(coords)]
        rx = [env.rd(o, "f32") for o in lods]
        mem, lanes_all = env.mem, env.lanes_all

        def run(idx):
            lanes = lanes_all if idx is None else idx
            n = lanes.size
            h = np.broadcast_to(np.asarray(rh(idx), np.uint64), (n,))
            cs = [np.broadcast_to(r(idx), (n,)) for r in rc]
            xs = [np.broadcast_to(r(idx), (n,)) for r in rx]
            vals = _fetch_all(mem, h, cs, xs, sample).view(dt)
            for k, w in enumerate(ws):
                w(idx, vals[:, k])
        return run
    return bind


def _fetch_all(mem, handles: np.ndarray, coords: list[np.ndarray], extra: list[np.ndarray],
               sample) -> np.ndarray:
    """(n, 4) uint32 texels, one table look-up per distinct handle among the lanes."""
    table = mem.textures
    if table is None:       # a launch without a table: every handle is unknown
        raise TextureFault("invalid texture object")
    first = handles[0]
    if (handles == first).all():
        return sample(table.get(int(first)), mem.mmu, coords, extra)
    out = np.empty((handles.size, 4), np.uint32)
    for hv in np.unique(handles):
        sel = handles == hv
        out[sel] = sample(table.get(int(hv)), mem.mmu, [c[sel] for c in coords],
                          [x[sel] for x in extra])
    return out
