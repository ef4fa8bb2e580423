"""Texture objects on the wire: the constants of a texture descriptor and its builder.

A texture object is a descriptor the daemon keeps per context (``gtex_create``) and names by
an opaque 64-bit handle that kernels receive as a ``.u64`` parameter.  The descriptor is
one fixed struct, :class:`libgdev.messages.TexDesc`, whose numbers are CUDA's own so that
the CUDA layers only rename fields:

* ``kind``: the resource type (``CU_RESOURCE_TYPE_LINEAR`` 2, ``..._PITCH2D`` 3);
* ``format``: ``CUarray_format`` (8/16/32-bit unsigned and signed integers, half, float);
* ``channels``: 1, 2 or 4 (one texel is ``channels`` elements of ``format``);
* ``addr``, ``width`` (texels), ``height`` (rows; 1 for linear), ``pitch`` (bytes per row;
  0 for linear);
* ``flags``: :data:`TEX_NORMALIZED_COORDS`, :data:`TEX_READ_NORMALIZED` (8/16-bit integers
  read as floats in [0, 1] or [-1, 1]), :data:`TEX_FILTER_LINEAR`, :data:`TEX_SURFACE` (a
  surface object, for ``suld``/``sust``: its sampling flags must be clear);
* ``modes``: the address mode of dimension ``k`` in byte ``k`` (``CUaddress_mode``: wrap 0,
  clamp 1, mirror 2, border 3);
* ``border``: the border colour, four float32 bit patterns;
* ``shape``: ``TEX_SHAPE_PLAIN`` (0: the 1D or 2D resource above) or, over a pitch-2D
  resource, how its ``depth`` slices, ``slice_pitch`` bytes apart, are read: 3D
  (``tex.3d``), 1D layered (``height`` 1, ``tex.a1d``), 2D layered (``tex.a2d``), cubemap
  (6 square faces, ``tex.cube``) or cubemap layered (``depth`` a multiple of 6,
  ``tex.acube``): ``depth`` is CUDA's array extent depth in every case;
* ``levels``: a mipmapped resource's level count (0 or 1: no mipmap).  Level 0 is the
  resource above, packed (``pitch`` one row of texels, ``slice_pitch`` ``pitch x height``
  or 0); level ``l`` follows level ``l - 1`` at once, packed too, its width and height
  halved (floored, at least 1), its depth halved for a 3D texture and kept for layers and
  faces (``gdevd.gpu.texture.mip_layout``, the rule libcuda's mipmapped arrays follow);
* ``lod_bias``, ``min_lod``, ``max_lod`` (float32 bit patterns): a fetch's level of detail
  plus the bias, clamped to ``[min_lod, max_lod]`` and to the levels there are; flag
  :data:`TEX_MIPMAP_LINEAR` blends the two levels around it, else the nearest is taken;
  ``max_aniso``: CUDA's ``maxAnisotropy`` (0..16), checked and otherwise ignored.
"""

from __future__ import annotations

import struct

from libgdev.messages import (  # noqa: F401  (re-exported: the descriptor's flags)
    TEX_FILTER_LINEAR,
    TEX_FLAGS,
    TEX_MIPMAP_LINEAR,
    TEX_NORMALIZED_COORDS,
    TEX_READ_NORMALIZED,
    TEX_SHAPE_3D,
    TEX_SHAPE_CUBEMAP,
    TEX_SHAPE_CUBEMAP_LAYERED,
    TEX_SHAPE_LAYERED_1D,
    TEX_SHAPE_LAYERED_2D,
    TEX_SHAPE_PLAIN,
    TEX_SURFACE,
    TexDesc,
)

# resource types (CUresourcetype / cudaResourceType)
TEX_RESOURCE_LINEAR = 2
TEX_RESOURCE_PITCH2D = 3

# element formats (CUarray_format)
TEX_FORMAT_U8 = 0x01
TEX_FORMAT_U16 = 0x02
TEX_FORMAT_U32 = 0x03
TEX_FORMAT_S8 = 0x08
TEX_FORMAT_S16 = 0x09
TEX_FORMAT_S32 = 0x0A
TEX_FORMAT_HALF = 0x10
TEX_FORMAT_FLOAT = 0x20

# address modes (CUaddress_mode / cudaTextureAddressMode)
TEX_ADDRESS_WRAP = 0
TEX_ADDRESS_CLAMP = 1
TEX_ADDRESS_MIRROR = 2
TEX_ADDRESS_BORDER = 3

# descriptor flags: TEX_NORMALIZED_COORDS, TEX_READ_NORMALIZED, TEX_FILTER_LINEAR,
# TEX_MIPMAP_LINEAR, TEX_FLAGS (defined with the message, so the generated C header has them)

MAX_ANISOTROPY = 16


def pack_modes(modes: tuple[int, ...] | list[int]) -> int:
    """The ``modes`` field of up to three per-dimension address modes (one byte each)."""
    out = 0
    for k, m in enumerate(modes):
        out |= (int(m) & 0xFF) << (8 * k)
    return out


def border_bits(color: tuple[float, ...] | list[float]) -> tuple[int, int, int, int]:
    """Four float32 bit patterns of a border colour (missing components are 0.0)."""
    vals = (list(color) + [0.0] * 4)[:4]
    return tuple(struct.unpack("<4I", struct.pack("<4f", *vals)))  # type: ignore[return-value]


def tex_desc(kind: int, addr: int, fmt: int, channels: int, width: int, height: int = 1,
             pitch: int = 0, *, modes=(TEX_ADDRESS_CLAMP,) * 3, linear: bool = False,
             normalized_coords: bool = False, read_normalized: bool = False,
             border=(0.0, 0.0, 0.0, 0.0), surface: bool = False, shape: int = TEX_SHAPE_PLAIN,
             depth: int = 0, slice_pitch: int = 0, levels: int = 0,
             mip_linear: bool = False, lod_bias: float = 0.0, min_lod: float = 0.0,
             max_lod: float = 0.0, max_aniso: int = 0) -> TexDesc:
    """A :class:`TexDesc` from named parts (see the module docstring); no validation here,
    the daemon checks every field."""
    flags = (TEX_NORMALIZED_COORDS if normalized_coords else 0) | \
        (TEX_READ_NORMALIZED if read_normalized else 0) | \
        (TEX_FILTER_LINEAR if linear else 0) | (TEX_SURFACE if surface else 0) | \
        (TEX_MIPMAP_LINEAR if mip_linear else 0)
    b = border_bits(border)
    lod = border_bits((lod_bias, min_lod, max_lod))
    return TexDesc(addr, width, height, pitch, kind, fmt, channels, flags, pack_modes(modes),
                   b[0], b[1], b[2], b[3], shape, depth, slice_pitch, levels, lod[0], lod[1],
                   lod[2], max_aniso, 0)
