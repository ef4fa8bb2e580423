"""Mip levels, explicit level of detail, gradients and gather (``tex.level``, ``tex.grad``,
``tld4``) on top of the texture unit's one-level sampler (``texsample.py``).

Semantics (the CUDA programming guide's texture-fetching appendix and the PTX ISA; where the
hardware's rounding is not documented, the choice is ours and both engines make it, bit for
bit: ``jit/tex.h`` repeats every step in C):

* Level of detail (LOD): ``tex.level`` gives it; ``tex.grad`` derives it from the
  gradients ``dPdx``, ``dPdy`` of the sampled coordinates: each scaled to level-0 texels
  (by the level-0 size with normalised coordinates, by the face width for cubemaps), the
  squared lengths summed in float32 in dimension order, ``rho2`` the larger, and
  ``LOD = log2(rho2) / 2`` (the C library's ``log2`` in double) kept to 8 fraction bits
  (round half to even), as the hardware keeps a fixed-point LOD.  A plain ``tex`` has LOD 0.
* The LOD (NaN as 0) plus ``lod_bias``, clamped to ``[min_lod, max_lod]`` and then to
  ``[0, levels - 1]``, all in float32, picks the level(s): the nearest mip filter takes
  level ``floor(LOD + 0.5)``; the linear one samples levels ``l = floor(LOD)`` and
  ``min(l + 1, levels - 1)`` and blends them ``(1 - f) A + f B`` in float32, ``f`` the
  fraction of LOD in 8-bit fixed point (round half to even), as linear filtering's weights.
* In level ``l`` normalised coordinates scale by that level's size; unnormalised ones are
  level-0 texel coordinates, multiplied by ``2^-l`` (exact); integer coordinates and layers
  name texels and layers of the level itself.
* ``max_aniso`` is ignored: every fetch is isotropic (the LOD of the longer gradient).
* Gather (``tld4.{r,g,b,a}``) reads, at level 0, component ``comp`` of the 2x2 footprint
  that bilinear filtering at the coordinate would blend (``i = floor(x - 0.5)``, ``j =
  floor(y - 0.5)``), whatever the filter mode, in the order ``(i, j+1)``, ``(i+1, j+1)``,
  ``(i+1, j)``, ``(i, j)``, through the address modes; float results for float formats and
  the normalised-float read mode, integers otherwise.
"""

from __future__ import annotations

import math

import numpy as np

from .texsample import GEOMETRIES, _check, _point, _sampled, _weight, fetch
from .texture import Texture

F32 = np.float32
# tld4's footprint, result component by component: (dx, dy) from (i, j)
GATHER_TAPS = ((0, 1), (1, 1), (1, 0), (0, 0))


def grad_lod(tex: Texture, geom: str, dpdx: list[np.ndarray],
             dpdy: list[np.ndarray]) -> np.ndarray:
    """The float32 LOD of per-lane gradients (one array per sampled dimension)."""
    dims = GEOMETRIES[geom][0]
    cube = geom in ("cube", "acube")
    sizes = (tex.width,) * 3 if cube else (tex.width, tex.height, tex.depth)
    scale = [F32(sizes[k]) if cube or tex.normalized_coords else F32(1) for k in range(dims)]
    rho = []
    for vec in (dpdx, dpdy):
        p = np.asarray(vec[0], F32) * scale[0]
        acc = p * p
        for k in range(1, dims):
            p = np.asarray(vec[k], F32) * scale[k]
            acc = acc + p * p
        rho.append(acc)
    rho2 = np.maximum(rho[0], rho[1])      # NaN propagates (numpy's maximum, tex.h's too)
    # the C library's log2 (math.log2), as compiled code calls it, once per distinct value
    vals, back = np.unique(rho2.astype(np.float64), return_inverse=True)
    lg = np.array([math.nan if math.isnan(v) else -math.inf if v == 0 else math.log2(v)
                   for v in vals], np.float64)[back.reshape(-1)]
    return (np.rint(lg * 128.0) / 256.0).astype(F32)


def clamp_lod(tex: Texture, lod: np.ndarray) -> np.ndarray:
    """LOD (NaN as 0) plus the bias, clamped by the descriptor and the levels (float32)."""
    lod = np.asarray(lod, F32)
    lod = np.where(np.isnan(lod), F32(0), lod) + F32(tex.lod_bias)
    lod = np.minimum(np.maximum(lod, F32(tex.min_lod)), F32(tex.max_lod))
    return np.minimum(np.maximum(lod, F32(0)), F32(tex.levels - 1))


def _at_level(tex: Texture, mmu, coords: list[np.ndarray], integer: bool, geom: str,
              levels: np.ndarray) -> np.ndarray:
    """(n, 4) uint32 words fetched lane by lane from level ``levels[lane]``."""
    out = np.empty((levels.size, 4), np.uint32)
    layered = GEOMETRIES[geom][1]
    for lv in np.unique(levels):
        sel = levels == lv
        cs = [np.asarray(c)[sel] for c in coords]
        if lv and not integer and not tex.normalized_coords and geom not in ("cube", "acube"):
            f = F32(2.0 ** -int(lv))
            cs = [c if layered and k == 0 else (c.astype(F32) * f)
                  for k, c in enumerate(cs)]
        out[sel] = fetch(tex.level(int(lv)), mmu, cs, integer, geom)
    return out


def fetch_lod(tex: Texture, mmu, coords: list[np.ndarray], integer: bool, geom: str,
              lod: np.ndarray | None = None) -> np.ndarray:
    """Fetch like :func:`texsample.fetch` at per-lane LOD ``lod`` (None: 0), choosing and
    blending mip levels as the module docstring says."""
    if tex.levels == 1:
        return fetch(tex, mmu, coords, integer, geom)
    _check(tex, geom)
    n = np.asarray(coords[0]).size
    lod = clamp_lod(tex, np.zeros(n, F32) if lod is None else np.broadcast_to(lod, (n,)))
    if not tex.mip_linear:
        return _at_level(tex, mmu, coords, integer, geom,
                         np.floor(lod + F32(0.5)).astype(np.int64))
    lo = np.floor(lod)
    frac = (np.rint((lod - lo).astype(np.float64) * 256.0) / 256.0).astype(F32)[:, None]
    lo = lo.astype(np.int64)
    a = _at_level(tex, mmu, coords, integer, geom, lo).view(F32)
    b = _at_level(tex, mmu, coords, integer, geom, np.minimum(lo + 1, tex.levels - 1))
    return ((F32(1) - frac) * a + frac * b.view(F32)).view(np.uint32)


def gather(tex: Texture, mmu, coords: list[np.ndarray], geom: str, comp: int) -> np.ndarray:
    """``tld4`` of component ``comp`` (0..3) at per-lane float ``coords`` by geometry
    ``geom`` (2d or a2d): (n, 4) uint32 words, the footprint in the module docstring's
    order."""
    _check(tex, geom)
    tex = tex.level(0)
    xs, base, normalized = _sampled(tex, geom, coords, False)
    (i, _), (j, _) = _weight(xs[0]), _weight(xs[1])
    cols = [_point(tex, mmu, [i + dx, j + dy], base, normalized)[:, comp]
            for dx, dy in GATHER_TAPS]
    out = np.stack(cols, axis=1)
    return out.view(np.uint32) if out.dtype == F32 else out.astype(np.uint32)
