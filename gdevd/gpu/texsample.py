"""The texture unit: fetches of many lanes from one texture object, as CUDA defines them.

Semantics (the CUDA programming guide's texture-fetching appendix, PTX ISA ``tex``):

* Coordinates: float coordinates are scaled by the size when normalised (``x * N``);
  integer coordinates name texels directly and are never filtered.
* Point sampling takes texel ``floor(x)``.  Linear filtering takes ``xB = x - 0.5``,
  ``i = floor(xB)`` and the weight ``a = frac(xB)`` in 9-bit fixed point (8 fraction bits,
  as the hardware keeps it: ``a = round(a * 256) / 256``), then ``(1-a) T[i] + a T[i+1]``
  (bilinear in 2D), in float32.
* Address modes act on texel indices, per dimension: clamp to ``[0, N-1]``; border gives
  the border colour; wrap (``i mod N``) and mirror (``i mod 2N`` reflected) need normalised
  coordinates and act as clamp without them (CUDA supports them only there).
  A fetch by integer index from a *linear* resource (``tex1Dfetch``) that falls outside it
  returns zeros, as the hardware's buffer fetch does.
* Results: float formats and the normalised-float read mode (8/16-bit integers divided by
  255, 65535, 127 or 32767, signed ones clamped at -1.0) give float32; other integer
  formats give the element sign- or zero-extended to 32 bits.  Channels a format lacks
  read as 0, and alpha as 1 (1.0 for float results).  NaN coordinates count as 0.

* Slices (``Texture.shape``): a 3D texture filters across its slices like the other two
  dimensions (trilinear: weights ``a``, ``b``, ``c`` per dimension, the weight of a tap
  ``(wx * wy) * wz``); a layered one takes an integer layer (clamped to the layers) that
  selects a slice and is never filtered; a cubemap takes a direction (x, y, z): the
  coordinate of largest magnitude m picks the face (x before y before z on ties, a
  non-negative one the even face) and the face is sampled in 2D at the normalised
  coordinates ``((s/m + 1)/2, (t/m + 1)/2)`` of the guide's cubemap table, with the
  texture's address modes inside that face (no filtering across faces); a layered cubemap's
  layer picks 6 slices.  A geometry the texture's shape does not have (``tex.3d`` on a 2D
  texture, ``tex.2d`` on a layered one) is a :class:`TextureFault`.

Every texel is read through the context's MMU (one vector load per channel and tap), so a
fetch over unmapped memory raises :class:`~gdevd.errors.MmuFault` like a global load.
"""

from __future__ import annotations

import itertools

import numpy as np

from .texture import Texture, TextureFault

_LIMIT = float(1 << 40)
# per instruction geometry: (coordinates sampled, whether the first operand is a layer)
GEOMETRIES = {"1d": (1, False), "2d": (2, False), "3d": (3, False), "a1d": (1, True),
              "a2d": (2, True), "cube": (3, False), "acube": (3, True)}


def _index(x: np.ndarray) -> np.ndarray:
    """Float texel coordinate -> int64, NaN as 0, infinities kept far outside."""
    x = np.nan_to_num(x.astype(np.float64), nan=0.0, posinf=_LIMIT, neginf=-_LIMIT)
    return np.floor(np.clip(x, -_LIMIT, _LIMIT)).astype(np.int64)


def _address(tex: Texture, i: np.ndarray, dim: int,
             normalized: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """(texel index in range, mask of lanes at the border or None) for mode of ``dim``."""
    n = (tex.width, tex.height, tex.depth)[dim]
    mode = tex.modes[dim]
    if not normalized and mode in ("wrap", "mirror"):
        mode = "clamp"
    if mode == "wrap":
        return np.mod(i, n), None
    if mode == "mirror":
        m = np.mod(i, 2 * n)
        return np.where(m >= n, 2 * n - 1 - m, m), None
    if mode == "border":
        out = (i < 0) | (i >= n)
        return np.clip(i, 0, n - 1), out
    return np.clip(i, 0, n - 1), None


def _texels(tex: Texture, mmu, off: np.ndarray, skip: np.ndarray | None) -> np.ndarray:
    """Texel values (n, 4) at byte offsets ``off``: float32 or int64; lanes in ``skip``
    are not read (zeros)."""
    dt, norm = tex.dtype, tex.norm
    esize = dt.itemsize
    n = off.size
    want = np.arange(n) if skip is None else np.flatnonzero(~skip)
    base = np.uint64(tex.addr) + off[want].astype(np.uint64)
    vas = (base[:, None] + np.arange(tex.channels, dtype=np.uint64) * np.uint64(esize))
    raw = np.asarray(mmu.load_v(np.ascontiguousarray(vas.ravel()), esize)).view(dt)
    raw = raw.reshape(want.size, tex.channels)
    floats = tex.float_result
    out = np.zeros((n, 4), np.float32 if floats else np.int64)
    out[:, 3] = 1
    if dt.kind == "f":
        vals = raw.astype(np.float32)
    elif floats and norm:
        vals = np.maximum(raw.astype(np.float32) / np.float32(norm), np.float32(-1.0))
    else:
        vals = raw.astype(np.int64)
    out[want, : tex.channels] = vals
    return out


def _border(tex: Texture, out: np.ndarray, mask: np.ndarray | None) -> None:
    if mask is not None and mask.any():
        color = np.array(tex.border, np.float32)
        out[mask] = color if out.dtype == np.float32 else color.astype(np.int64)


def _point(tex: Texture, mmu, idx: list[np.ndarray], base: np.ndarray,
           normalized: bool) -> np.ndarray:
    """Point samples at texel indices ``idx`` (per dimension) of the slice at byte offset
    ``base`` (per lane)."""
    off, mask = base, None
    for dim, i in enumerate(idx):
        j, m = _address(tex, i, dim, normalized)
        off = off + j * (tex.texel_size, tex.pitch, tex.slice_pitch)[dim]
        mask = m if mask is None else (mask if m is None else mask | m)
    out = _texels(tex, mmu, off, mask)
    _border(tex, out, mask)
    return out


def _weight(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(floor of x - 0.5, its 9-bit fixed-point fraction as float32)."""
    xb = np.nan_to_num(x.astype(np.float32), nan=0.0) - np.float32(0.5)
    i = np.floor(np.clip(xb.astype(np.float64), -_LIMIT, _LIMIT))
    a = np.round((xb.astype(np.float64) - i) * 256.0) / 256.0
    return i.astype(np.int64), a.astype(np.float32)[:, None]


def _linear(tex: Texture, mmu, xs: list[np.ndarray], base: np.ndarray,
            normalized: bool) -> np.ndarray:
    """The 2, 4 or 8 taps around ``xs`` blended in float32, dimension 0 fastest."""
    taps = [_weight(x) for x in xs]
    out = np.zeros((xs[0].size, 4), np.float32)
    for corner in itertools.product((0, 1), repeat=len(xs)):
        corner = corner[::-1]
        w = None
        for (_, a), c in zip(taps, corner, strict=True):
            wd = a if c else np.float32(1) - a
            w = wd if w is None else w * wd
        idx = [i + c for (i, _), c in zip(taps, corner, strict=True)]
        out += w * _point(tex, mmu, idx, base, normalized)
    return out


def cube_face(x: np.ndarray, y: np.ndarray,
              z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(face, s, t) of directions (x, y, z): the face of the major axis and the normalised
    face coordinates ``(s/m + 1)/2``, ``(t/m + 1)/2`` (the guide's cubemap table)."""
    x, y, z = (np.nan_to_num(np.asarray(c, np.float32), nan=0.0, posinf=np.inf,
                             neginf=-np.inf) for c in (x, y, z))
    ax, ay, az = np.abs(x), np.abs(y), np.abs(z)
    xm = (ax >= ay) & (ax >= az)
    ym = ~xm & (ay >= az)
    face = np.where(xm, np.where(x >= 0, 0, 1),
                    np.where(ym, np.where(y >= 0, 2, 3), np.where(z >= 0, 4, 5)))
    m = np.where(xm, ax, np.where(ym, ay, az))
    s = np.choose(face, [-z, z, x, x, x, -x])
    t = np.choose(face, [-y, -y, z, -z, -y, -y])
    one, two = np.float32(1), np.float32(2)
    with np.errstate(all="ignore"):
        return face.astype(np.int64), (s / m + one) / two, (t / m + one) / two


def _check(tex: Texture, geom: str) -> None:
    if (tex.shape == "plain") != (geom in ("1d", "2d")) or \
            (tex.shape != "plain" and tex.shape != geom):
        what = "1D/2D" if tex.shape == "plain" else tex.shape
        raise TextureFault(f"tex.{geom} on a {what} texture object")


def _sampled(tex: Texture, geom: str, coords: list[np.ndarray], integer: bool):
    """(coordinates to sample, per-lane slice byte offset, normalised) of a fetch."""
    dims, layered = GEOMETRIES[geom]
    n = np.asarray(coords[0]).size
    base = np.zeros(n, np.int64)
    if layered:
        layer = np.clip(np.asarray(coords[0]).astype(np.int64), 0, tex.layers - 1)
        base = layer * (6 if geom == "acube" else 1) * tex.slice_pitch
        coords = coords[1:]
    coords = coords[:dims]
    if geom in ("cube", "acube"):
        face, s, t = cube_face(*coords)
        w = np.float32(tex.width)
        return [s * w, t * w], base + face * tex.slice_pitch, True
    if integer:
        return [np.asarray(c).astype(np.int64) for c in coords], base, tex.normalized_coords
    xs = [np.asarray(c, np.float32) for c in coords]
    if tex.normalized_coords:
        sizes = (tex.width, tex.height, tex.depth)
        xs = [x * np.float32(sizes[k]) for k, x in enumerate(xs)]
    return xs, base, tex.normalized_coords


def _plain_integer(tex: Texture, mmu, coords: list[np.ndarray]) -> np.ndarray:
    """An integer fetch from a plain resource: a linear one's buffer fetch (zeros outside)
    or a pitch-2D one's point sample."""
    idx = [np.asarray(c).astype(np.int64) for c in coords]
    base = np.zeros(idx[0].size, np.int64)
    if tex.pitch2d:
        return _point(tex, mmu, idx, base, tex.normalized_coords)
    outside = (idx[0] < 0) | (idx[0] >= tex.width)
    out = _texels(tex, mmu, np.clip(idx[0], 0, tex.width - 1) * tex.texel_size, outside)
    out[outside] = 0
    return out


def fetch(tex: Texture, mmu, coords: list[np.ndarray], integer: bool,
          geom: str = "2d") -> np.ndarray:
    """Fetch ``tex`` by instruction geometry ``geom`` (a key of :data:`GEOMETRIES`) at
    per-lane ``coords`` (the instruction's coordinate operands, a layer first where the
    geometry has one, as int32); (n, 4) uint32 words (float32 bits or 32-bit integers) as
    ``tex`` returns them to registers.  :class:`TextureFault` if ``tex`` has no such
    geometry."""
    _check(tex, geom)
    if tex.shape == "plain":
        coords = coords[:2] if tex.pitch2d else coords[:1]
        if integer:
            out = _plain_integer(tex, mmu, coords)
            return out.view(np.uint32) if out.dtype == np.float32 else out.astype(np.uint32)
    xs, base, normalized = _sampled(tex, geom if tex.shape != "plain" else "2d"
                                    if tex.pitch2d else "1d", coords, integer)
    if integer:
        out = _point(tex, mmu, xs, base, normalized)
    elif tex.linear_filter:
        out = _linear(tex, mmu, xs, base, normalized)
    else:
        out = _point(tex, mmu, [_index(x) for x in xs], base, normalized)
    if out.dtype == np.float32:
        return out.view(np.uint32)
    return out.astype(np.uint32)
