"""A client's texture descriptor (``libgdev.texture``) checked and decoded into the texture
unit's :class:`~gdevd.gpu.texture.Texture`; every refusal is EINVAL naming the field.

Rules (CUDA's, except where noted): formats are CUDA's ``CUarray_format``; 1, 2 or 4
channels; a linear resource has at most ``MAX_LINEAR_WIDTH`` texels, a pitch-2D one at most
``MAX_2D_WIDTH`` x ``MAX_2D_HEIGHT`` with a pitch from one row of texels to ``MAX_PITCH``
bytes; a 3D, layered or cubemap one (``shape``) is a pitch-2D resource of ``depth`` slices
(CUDA's limits: ``MAX_3D`` in each dimension, ``MAX_LAYERS`` layers, ``MAX_CUBE_LAYERS``
cubemaps of square faces) at least one slice of rows apart, at most ``MAX_SLICE_PITCH``;
the normalised-float read mode needs an 8/16-bit integer format (it is ignored for float
formats, as CUDA's driver API does); linear filtering needs a float result.  Where CUDA
demands ``textureAlignment`` (512 bytes) of the address and 32 bytes of the pitch, we ask
only the natural alignment of one element (more programs run; nothing reads misaligned).
A mipmapped texture (``levels`` > 1) is a packed pitch-2D resource (one row of texels per
pitch, one slice of rows per slice pitch) of at most ``1 + floor(log2(largest extent))``
levels, as CUDA's mipmapped arrays; its level-of-detail bias and clamps are finite floats,
``min_lod <= max_lod``; the mipmap linear filter needs a float result; without levels these
fields are zero.  ``max_aniso`` is at most 16; ``reserved`` is zero.
"""

from __future__ import annotations

import errno
import struct

import numpy as np

from libgdev import texture as T
from libgdev.messages import TexDesc

from ..errors import GdevError
from ..gpu import texture as G

# CUarray_format -> (element dtype, divisor of the normalised-float read mode or 0)
FORMATS: dict[int, tuple[np.dtype, float]] = {
    T.TEX_FORMAT_U8: (np.dtype(np.uint8), 255.0),
    T.TEX_FORMAT_U16: (np.dtype(np.uint16), 65535.0),
    T.TEX_FORMAT_U32: (np.dtype(np.uint32), 0.0),
    T.TEX_FORMAT_S8: (np.dtype(np.int8), 127.0),
    T.TEX_FORMAT_S16: (np.dtype(np.int16), 32767.0),
    T.TEX_FORMAT_S32: (np.dtype(np.int32), 0.0),
    T.TEX_FORMAT_HALF: (np.dtype(np.float16), 0.0),
    T.TEX_FORMAT_FLOAT: (np.dtype(np.float32), 0.0),
}


def _fail(msg: str) -> GdevError:
    return GdevError(errno.EINVAL, f"texture descriptor: {msg}")


def _modes(d: TexDesc) -> tuple[str, str, str]:
    if d.modes >> 24 or any((d.modes >> (8 * k)) & 0xFF >= len(G.ADDRESS_MODES)
                            for k in range(3)):
        raise _fail(f"bad address modes 0x{d.modes:x}")
    return tuple(G.ADDRESS_MODES[(d.modes >> (8 * k)) & 0xFF]
                 for k in range(3))  # type: ignore[return-value]


def _sampling(d: TexDesc, dt: np.dtype, norm: float) -> bool:
    """Whether the normalised-float read mode applies, after checking the flags."""
    if d.flags & ~T.TEX_FLAGS:
        raise _fail(f"unknown flags 0x{d.flags & ~T.TEX_FLAGS:x}")
    if d.flags & T.TEX_SURFACE and d.flags != T.TEX_SURFACE:
        raise _fail("a surface object takes no sampling flags")
    read_norm = bool(d.flags & T.TEX_READ_NORMALIZED) and dt.kind != "f"
    if read_norm and not norm:
        raise _fail("normalised-float reads need an 8- or 16-bit integer format")
    if d.flags & T.TEX_FILTER_LINEAR and not (dt.kind == "f" or read_norm):
        raise _fail("linear filtering needs a float result (float format or normalised read)")
    return read_norm


def _geometry(d: TexDesc, esize: int) -> tuple[int, int]:
    """(height, pitch) after checking the resource's shape."""
    if d.channels not in (1, 2, 4):
        raise _fail(f"{d.channels} channels (1, 2 or 4)")
    texel = esize * d.channels
    if d.kind == T.TEX_RESOURCE_LINEAR:
        if not 1 <= d.width <= G.MAX_LINEAR_WIDTH or d.height not in (0, 1) or d.pitch:
            raise _fail(f"linear resource of {d.width} texels, height {d.height}, pitch "
                        f"{d.pitch} (1..{G.MAX_LINEAR_WIDTH} texels, height 1, pitch 0)")
        return 1, 0
    if d.kind != T.TEX_RESOURCE_PITCH2D:
        raise _fail(f"resource type {d.kind} (linear {T.TEX_RESOURCE_LINEAR} or pitch2D "
                    f"{T.TEX_RESOURCE_PITCH2D})")
    wmax, hmax = (G.MAX_2D_WIDTH, G.MAX_2D_HEIGHT) if d.shape == T.TEX_SHAPE_PLAIN else \
        (G.MAX_3D,) * 2 if d.shape == T.TEX_SHAPE_3D else (G.MAX_LAYERED_WIDTH,) * 2
    if not (1 <= d.width <= wmax and 1 <= d.height <= hmax):
        raise _fail(f"pitch2D resource of {d.width}x{d.height} (at most {wmax}x{hmax})")
    if not d.width * texel <= d.pitch <= G.MAX_PITCH or d.pitch % esize:
        raise _fail(f"pitch {d.pitch} (a multiple of {esize} from {d.width * texel} to "
                    f"{G.MAX_PITCH})")
    return d.height, d.pitch


def _slices(d: TexDesc, esize: int) -> tuple[str, int, int]:
    """(shape, depth, slice pitch) after checking them against the 2D geometry."""
    if d.shape >= len(G.SHAPES):
        raise _fail(f"shape {d.shape} (0..{len(G.SHAPES) - 1})")
    shape = G.SHAPES[d.shape]
    if shape == "plain":
        if d.depth not in (0, 1) or d.slice_pitch:
            raise _fail(f"depth {d.depth}, slice pitch {d.slice_pitch} on a plain resource "
                        "(depth 0 or 1, slice pitch 0)")
        return shape, 1, 0
    if d.kind != T.TEX_RESOURCE_PITCH2D:
        raise _fail(f"a {shape} texture needs a pitch2D resource")
    lo, hi = {"3d": (1, G.MAX_3D), "a1d": (1, G.MAX_LAYERS), "a2d": (1, G.MAX_LAYERS),
              "cube": (6, 6), "acube": (6, 6 * G.MAX_CUBE_LAYERS)}[shape]
    if not lo <= d.depth <= hi or (shape == "acube" and d.depth % 6):
        raise _fail(f"depth {d.depth} of a {shape} texture ({lo}..{hi}"
                    f"{', a multiple of 6' if shape == 'acube' else ''})")
    if shape == "a1d" and d.height != 1:
        raise _fail(f"a layered 1D texture of {d.height} rows (1)")
    if shape in ("cube", "acube") and d.width != d.height:
        raise _fail(f"cubemap faces of {d.width}x{d.height} (square)")
    if not d.pitch * d.height <= d.slice_pitch <= G.MAX_SLICE_PITCH or d.slice_pitch % esize:
        raise _fail(f"slice pitch {d.slice_pitch} (a multiple of {esize} from "
                    f"{d.pitch * d.height} to {G.MAX_SLICE_PITCH})")
    return shape, d.depth, d.slice_pitch


def _f32(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def _mipmap(d: TexDesc, dt: np.dtype, height: int, shape: str, texel: int,
            read_norm: bool) -> dict:
    """The mipmap fields of the Texture after checking them (see the module docstring)."""
    if d.reserved or d.max_aniso > T.MAX_ANISOTROPY:
        raise _fail(f"reserved 0x{d.reserved:x}, max anisotropy {d.max_aniso} (0, "
                    f"0..{T.MAX_ANISOTROPY})")
    mip = (d.lod_bias, d.min_lod, d.max_lod, d.flags & T.TEX_MIPMAP_LINEAR)
    if d.levels <= 1:
        if any(mip):
            raise _fail("level-of-detail fields or the mipmap filter without mip levels")
        return {}
    if d.kind != T.TEX_RESOURCE_PITCH2D or d.flags & T.TEX_SURFACE:
        raise _fail("mip levels need a pitch2D texture resource")
    most = max(d.width, height, d.depth if shape == "3d" else 1).bit_length()
    if d.levels > most:
        raise _fail(f"{d.levels} mip levels (at most {most} for this size)")
    if d.pitch != d.width * texel or d.slice_pitch != (0 if shape == "plain" else
                                                       d.pitch * height):
        raise _fail(f"pitch {d.pitch}, slice pitch {d.slice_pitch} of a mipmapped texture "
                    "(packed rows and slices)")
    bias, lo, hi = (_f32(b) for b in mip[:3])
    if not all(np.isfinite((bias, lo, hi))) or lo > hi:
        raise _fail(f"level-of-detail bias {bias}, clamps [{lo}, {hi}] (finite, min <= max)")
    if mip[3] and not (dt.kind == "f" or read_norm):
        raise _fail("the mipmap linear filter needs a float result")
    return dict(levels=d.levels, mip_linear=bool(mip[3]), lod_bias=bias, min_lod=lo,
                max_lod=hi)


def validate(d: TexDesc) -> G.Texture:
    """The texture unit's :class:`~gdevd.gpu.texture.Texture` for wire descriptor ``d``.

    The range of texels is checked here only against the address space; the caller checks
    that the context owns it (every fetch goes through the MMU anyway).
    """
    if d.format not in FORMATS:
        raise _fail(f"format 0x{d.format:x}")
    dt, norm = FORMATS[d.format]
    read_norm = _sampling(d, dt, norm)
    modes = _modes(d)
    height, pitch = _geometry(d, dt.itemsize)
    shape, depth, slice_pitch = _slices(d, dt.itemsize)
    if d.addr % dt.itemsize:
        raise _fail(f"address 0x{d.addr:x} not aligned to its {dt.itemsize}-byte elements")
    mip = _mipmap(d, dt, height, shape, dt.itemsize * d.channels, read_norm)
    border = struct.unpack("<4f", struct.pack("<4I", d.border0, d.border1, d.border2,
                                              d.border3))
    tex = G.Texture(d.kind == T.TEX_RESOURCE_PITCH2D, d.addr, dt, norm if read_norm else 0.0,
                    d.channels, d.width, height, pitch, bool(d.flags & T.TEX_NORMALIZED_COORDS),
                    read_norm, bool(d.flags & T.TEX_FILTER_LINEAR), modes, border,
                    bool(d.flags & T.TEX_SURFACE), shape, depth, slice_pitch, **mip)
    if d.addr + tex.span > G.VA_LIMIT:
        raise _fail(f"range 0x{d.addr:x}+{tex.span} beyond the address space")
    return tex
