"""Surface loads and stores:
``suld.b.{1d,2d,3d,a1d,a2d}{,.v2,.v4}.{b8,b16,b32,b64}.{trap,clamp,zero}`` and ``sust.b`` of
the same forms, ``[surf, {x, y}]`` with ``x`` in bytes (PTX ISA); ``{x, y, z, _}`` for 3d,
``{layer, x}`` for a1d, ``{layer, x, y, _}`` for a2d (also what nvcc emits for cubemap
surfaces, the layer being ``6 * cubemap + face``).

``surf`` is a ``.u64`` register holding a surface object of the launching context (a
:class:`~gdevd.gpu.texture.Texture` with ``surface`` set); the access reads or writes
``vec`` elements of ``b`` bits at byte ``x`` of row ``y``, through the context's page table.
The geometry must be the surface's shape (a2d also reads cubemaps, whose faces are its
layers), else the kernel faults.  Out of range (``x`` outside the row's bytes for the whole
access, ``y`` outside the rows, ``z`` or the layer outside the slices):
``.trap`` faults the kernel (``out-of-bounds surface access``), ``.clamp`` moves the access
to the nearest in-range place, ``.zero`` loads zeros and drops stores.  ``x`` not a multiple
of the element size faults as a misaligned access.  Every lane's place is found (and any
of these faults raised) before an element moves; the elements then move lane by lane, a page
fault stopping them.  The compiling engine does the same in C (jit/surfops.py, surf.h).
"""

from __future__ import annotations

import numpy as np

from gdevd.errors import MmuFault
from gdevd.gpu.texture import TextureFault

from .decode import Ins, op, regs_of
from .ptxtypes import DTYPES, size_of
from .syntax import Group, Imm, Reg, Sink, Vec

GEOMETRY = {"1d": 1, "2d": 2, "3d": 4, "a1d": 2, "a2d": 4}   # -> coordinate operands
_SHAPES = {"1d": ("plain",), "2d": ("plain",), "3d": ("3d",), "a1d": ("a1d",),
           "a2d": ("a2d", "cube", "acube")}
_ORDER = {"1d": (0, None, None), "2d": (0, 1, None), "3d": (0, 1, 2), "a1d": (1, None, 0),
          "a2d": (1, 2, 0)}    # operand of x, y and the slice
MODES = ("trap", "clamp", "zero")
_TYPES = ("b8", "b16", "b32", "b64")


def operands(ins: Ins, addr_k: int):
    """(geometry, vector width, element type, mode, handle register, coordinates, values)."""
    geom = [g for g in GEOMETRY if g in ins.flags]
    mode = [m for m in MODES if m in ins.flags]
    ins.only({"b", "v2", "v4", *GEOMETRY, *MODES})
    if "b" not in ins.flags or len(geom) != 1 or len(mode) != 1 or len(ins.types) != 1 or \
            ins.types[0] not in _TYPES:
        raise ins.fail("surfaces: only suld.b/sust.b, .1d/.2d/.3d/.a1d/.a2d, .b8-.b64, "
                       ".trap/.clamp/.zero")
    ins.nargs(2)
    a = ins.args[addr_k]
    if not (isinstance(a, Group) and len(a.items) == 2 and isinstance(a.items[0], Reg) and
            isinstance(a.items[1], Vec)):
        raise ins.fail("expected a surface operand [surf, {coords}]")
    dims = GEOMETRY[geom[0]]
    coords = list(a.items[1].items)
    if len(coords) != dims or not all(isinstance(c, Reg | Imm) for c in coords):
        raise ins.fail(f"{geom[0]} surfaces take {dims} coordinate(s)")
    # the coordinates as (x, y, slice), None for 0: a layer leads in the layered forms, 3d's
    # fourth is unused
    coords = [None if k is None else coords[k] for k in _ORDER[geom[0]]]
    vals = regs_of(ins.args[1 - addr_k])
    vec = 4 if "v4" in ins.flags else 2 if "v2" in ins.flags else 1
    if len(vals) != vec:
        raise ins.fail("values do not match the vector width")
    return geom[0], vec, ins.types[0], mode[0], a.items[0], coords, vals


INVALID = "invalid surface object"
OUT_OF_RANGE = "out-of-bounds surface access"


def wrong_geometry(geom: str, shape: str) -> str:
    """The fault's words for a ``geom`` access of a surface of ``shape`` (both engines)."""
    return f"{geom} surface access on a {'1D/2D' if shape == 'plain' else shape} surface object"


def _one(surf, xyz, size: int, esize: int, mode: str):
    """(byte addresses, mask of lanes out of range under .zero) on one surface; ``xyz``:
    byte column, row and slice per lane."""
    row = surf.width * surf.texel_size
    x, y, z = (c.astype(np.int64) for c in xyz)
    out = (x < 0) | (x + size > row) | (y < 0) | (y >= surf.height) | (z < 0) | \
        (z >= surf.depth)
    if out.any() and mode == "trap":
        raise TextureFault(OUT_OF_RANGE)
    if mode == "clamp":
        x = np.clip(x, 0, row - size) // esize * esize
        y, z = np.clip(y, 0, surf.height - 1), np.clip(z, 0, surf.depth - 1)
    skip = out if mode == "zero" else np.zeros(x.size, bool)
    x, y, z = (np.where(skip, 0, c) for c in (x, y, z))
    off = z * surf.slice_pitch + y * surf.pitch + x
    bad = (x % esize) != 0
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise MmuFault(int(surf.addr + int(off[i])), "misaligned", i)
    return np.uint64(surf.addr) + off.astype(np.uint64), skip


def _addresses(mem, handles, xyz, geom: str, size: int, esize: int, mode: str):
    """(per-lane byte address of the access, mask of lanes .zero leaves out); one table
    look-up per distinct handle among the lanes."""
    if mem.textures is None:
        raise TextureFault(INVALID)
    va, skip = np.empty(handles.size, np.uint64), np.zeros(handles.size, bool)
    for hv in np.unique(handles):
        sel = handles == hv
        surf = mem.textures.get(int(hv), surface=True)
        if surf.shape not in _SHAPES[geom]:
            raise TextureFault(wrong_geometry(geom, surf.shape))
        va[sel], skip[sel] = _one(surf, [c[sel] for c in xyz], size, esize, mode)
    return va, skip


def _locator(env, obj, geom: str, coords, vec: int, esize: int, mode: str):
    """``locate(idx) -> (lanes, kept lanes, (kept, vec) element addresses)`` of an access."""
    rh, mem = env.rd(obj, "u64"), env.mem
    rc = [None if c is None else env.rd(c, "s32") for c in coords]
    lanes_all = env.lanes_all

    def locate(idx):
        n = (lanes_all if idx is None else idx).size
        h = np.broadcast_to(np.asarray(rh(idx), np.uint64), (n,))
        xyz = [np.zeros(n, np.int32) if r is None else np.broadcast_to(r(idx), (n,))
               for r in rc]
        va, zero = _addresses(mem, h, xyz, geom, esize * vec, esize, mode)
        keep = np.flatnonzero(~zero)
        vas = (va[keep][:, None] + np.arange(vec, dtype=np.uint64) * np.uint64(esize)).ravel()
        return n, keep, vas
    return locate


@op("suld")
def dec_suld(ins: Ins):
    """Decoder of ``suld.b`` (see the module docstring)."""
    geom, vec, t, mode, obj, coords, dests = operands(ins, 1)
    if not all(isinstance(d, Reg | Sink) for d in dests):
        raise ins.fail("suld needs destination registers")
    dt, esize = DTYPES[t], size_of(t)

    def bind(env):
        ws, locate, mem = [env.wr(d, t) for d in dests], \
            _locator(env, obj, geom, coords, vec, esize, mode), env.mem

        def run(idx):
            n, keep, vas = locate(idx)
            vals = np.zeros((n, vec), dt)
            if vas.size:
                vals[keep] = np.asarray(mem.mmu.load_v(vas, esize)).view(dt).reshape(-1, vec)
            for k, w in enumerate(ws):
                w(idx, vals[:, k])
        return run
    return bind


@op("sust")
def dec_sust(ins: Ins):
    """Decoder of ``sust.b`` (see the module docstring)."""
    geom, vec, t, mode, obj, coords, srcs = operands(ins, 0)
    dt, esize = DTYPES[t], size_of(t)

    def bind(env):
        rs, locate, mem = [env.rd(s, t) for s in srcs], \
            _locator(env, obj, geom, coords, vec, esize, mode), env.mem

        def run(idx):
            n, keep, vas = locate(idx)
            vals = np.empty((n, vec), dt)
            for k, r in enumerate(rs):
                vals[:, k] = r(idx)
            if vas.size:
                mem.mmu.store_v(vas, vals[keep].view(np.dtype(f"u{esize}")).ravel())
        return run
    return bind
