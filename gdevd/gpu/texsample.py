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

Every texel is read through the context's MMU (one vector load per channel and tap), so a
fetch over unmapped memory raises :class:`~gdevd.errors.MmuFault` like a global load.
"""

from __future__ import annotations

import numpy as np

from .texture import Texture

_LIMIT = float(1 << 40)


def _index(x: np.ndarray) -> np.ndarray:
    """Float texel coordinate -> int64, NaN as 0, infinities kept far outside."""
    x = np.nan_to_num(x.astype(np.float64), nan=0.0, posinf=_LIMIT, neginf=-_LIMIT)
    return np.floor(np.clip(x, -_LIMIT, _LIMIT)).astype(np.int64)


def _address(tex: Texture, i: np.ndarray, dim: int) -> tuple[np.ndarray, np.ndarray | None]:
    """(texel index in range, mask of lanes at the border or None) for mode of ``dim``."""
    n = tex.width if dim == 0 else tex.height
    mode = tex.modes[dim]
    if not tex.normalized_coords and mode in ("wrap", "mirror"):
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


def _texels(tex: Texture, mmu, ix: np.ndarray, iy: np.ndarray | None,
            skip: np.ndarray | None) -> np.ndarray:
    """Texel values (n, 4): float32 or int64; lanes in ``skip`` are not read (zeros)."""
    dt, norm = tex.dtype, tex.norm
    esize = dt.itemsize
    n = ix.size
    want = np.arange(n) if skip is None else np.flatnonzero(~skip)
    off = ix[want] * tex.texel_size
    if iy is not None:
        off = off + iy[want] * tex.pitch
    base = np.uint64(tex.addr) + off.astype(np.uint64)
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


def _point(tex: Texture, mmu, idx: list[np.ndarray]) -> np.ndarray:
    ix, bx = _address(tex, idx[0], 0)
    iy, by = _address(tex, idx[1], 1) if len(idx) > 1 else (None, None)
    mask = bx if by is None else (by if bx is None else bx | by)
    out = _texels(tex, mmu, ix, iy, mask)
    _border(tex, out, mask)
    return out


def _weight(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(floor of x - 0.5, its 9-bit fixed-point fraction as float32)."""
    xb = np.nan_to_num(x.astype(np.float32), nan=0.0) - np.float32(0.5)
    i = np.floor(np.clip(xb.astype(np.float64), -_LIMIT, _LIMIT))
    a = np.round((xb.astype(np.float64) - i) * 256.0) / 256.0
    return i.astype(np.int64), a.astype(np.float32)[:, None]


def _linear(tex: Texture, mmu, xs: list[np.ndarray]) -> np.ndarray:
    i0, a = _weight(xs[0])
    taps_x = [i0, i0 + 1]
    wx = [np.float32(1) - a, a]
    if len(xs) == 1:
        return sum(w * _point(tex, mmu, [i]) for w, i in zip(wx, taps_x, strict=True))
    j0, b = _weight(xs[1])
    wy = [np.float32(1) - b, b]
    out = np.zeros((xs[0].size, 4), np.float32)
    for wj, j in zip(wy, [j0, j0 + 1], strict=True):
        for wi, i in zip(wx, taps_x, strict=True):
            out += (wi * wj) * _point(tex, mmu, [i, j])
    return out


def fetch(tex: Texture, mmu, coords: list[np.ndarray], integer: bool) -> np.ndarray:
    """Fetch ``tex`` at per-lane ``coords`` (1 or 2 arrays of one length); (n, 4) uint32
    words (float32 bits or 32-bit integers) as ``tex`` returns them to registers."""
    coords = coords[:2] if tex.pitch2d else coords[:1]
    if integer:
        idx = [np.asarray(c).astype(np.int64) for c in coords]
        if not tex.pitch2d:
            outside = (idx[0] < 0) | (idx[0] >= tex.width)
            out = _texels(tex, mmu, np.clip(idx[0], 0, tex.width - 1), None, outside)
            out[outside] = 0
        else:
            out = _point(tex, mmu, idx)
    else:
        xs = [np.asarray(c, np.float32) for c in coords]
        if tex.normalized_coords:
            sizes = (tex.width, tex.height)
            xs = [x * np.float32(sizes[k]) for k, x in enumerate(xs)]
        if tex.linear_filter:
            out = _linear(tex, mmu, xs)
        else:
            out = _point(tex, mmu, [_index(x) for x in xs])
    if out.dtype == np.float32:
        return out.view(np.uint32)
    return out.astype(np.uint32)
