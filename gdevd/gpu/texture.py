"""Texture objects: descriptors the texture unit samples, and the per-context table.

Theory of operation
-------------------
A real GPU keeps texture headers in a per-channel pool and a kernel names one by index; here
each context has a :class:`TextureTable` whose keys are opaque 64-bit handles drawn at
random (never 0, never reused within the table), so a handle a kernel presents is either one
this context created and has not destroyed, or a fault.  Another context's handle, a stale
one or a forged number all miss the table the same way: :class:`TextureFault`, which the
executor reports with the kernel and PTX line and no address.

A :class:`Texture` holds only what the sampler needs (``texsample.py``), already decoded and
validated by the runtime (``gdevd/runtime/texdesc.py`` checks the client's descriptor
against the limits below, so the sampler's address arithmetic stays inside the 40-bit
address space).  The bytes it describes are read on every fetch through the context's page
table like any global load, so a texture over memory freed later faults at its next use and
can never reach memory outside the context.
"""

from __future__ import annotations

import dataclasses
import errno
import functools
import secrets
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from gdevd.errors import GdevError

MAX_LINEAR_WIDTH = 1 << 27      # CUDA's maxTexture1DLinear
MAX_2D_WIDTH = 1 << 17          # CUDA's maxTexture2DLinear (width, height, pitch)
MAX_2D_HEIGHT = 1 << 16
MAX_PITCH = 1 << 21
MAX_3D = 1 << 14                # CUDA's maxTexture3D (each of width, height, depth)
MAX_LAYERED_WIDTH = 1 << 15     # maxTexture1DLayered/2DLayered/Cubemap width (and height)
MAX_LAYERS = 2048               # maxTexture1DLayered/2DLayered layers
MAX_CUBE_LAYERS = 2046          # maxTextureCubemapLayered layers (cubemaps)
MAX_SLICE_PITCH = 1 << 36       # MAX_PITCH x MAX_LAYERED_WIDTH rows
VA_LIMIT = 1 << 40              # the MMU's virtual address space
TEXTURES_PER_CONTEXT = 4096
ADDRESS_MODES = ("wrap", "clamp", "mirror", "border")   # CUDA's numbering, 0..3
# how the slices of a resource are read, in the wire's TEX_SHAPE_* numbering; each but
# "plain" is also the name of the one tex/suld/sust geometry that may read it
SHAPES = ("plain", "3d", "a1d", "a2d", "cube", "acube")


class TextureFault(GdevError):
    """A kernel presented a texture handle its context does not hold (``reason`` says why,
    without an address)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(errno.EFAULT, reason)


@dataclass(frozen=True, slots=True)
class Texture:
    """A validated texture object.

    ``pitch2d`` False: a linear resource of ``width`` texels (``height`` 1, ``pitch`` 0).
    ``shape``: one of :data:`SHAPES`; beyond "plain" (one 1D or 2D resource, ``depth`` 1)
    the resource is ``depth`` slices of ``height`` rows, slice ``k`` at ``addr + k *
    slice_pitch``: the z extent of a 3D texture, the layers of a layered one, the 6 faces
    of a cubemap (6 per cubemap of a layered cubemap).
    ``levels``: mip levels, level 0 being the fields above and the others packed after it
    (:func:`mip_layout`, :meth:`level`); ``mip_linear``, ``lod_bias``,
    ``min_lod``, ``max_lod``: how a fetch's level of detail picks them (``texmip.py``).
    ``dtype``: one element (channel); ``norm``: the divisor of the normalised-float read
    mode for 8/16-bit integers (0 for other formats); ``modes``: per dimension, one of
    :data:`ADDRESS_MODES`; ``border``: the border colour (RGBA floats).
    """

    pitch2d: bool
    addr: int
    dtype: np.dtype
    norm: float
    channels: int
    width: int
    height: int
    pitch: int
    normalized_coords: bool
    read_normalized: bool
    linear_filter: bool
    modes: tuple[str, str, str]
    border: tuple[float, float, float, float]
    surface: bool = False       # a surface object (suld/sust), not a texture (tex)
    shape: str = "plain"
    depth: int = 1
    slice_pitch: int = 0
    levels: int = 1
    mip_linear: bool = False
    lod_bias: float = 0.0
    min_lod: float = 0.0
    max_lod: float = 0.0

    @property
    def texel_size(self) -> int:
        """Bytes per texel."""
        return self.dtype.itemsize * self.channels

    @property
    def span(self) -> int:
        """Bytes from ``addr`` to the end of the last texel of the last level."""
        last = self.level(self.levels - 1)
        return last.addr - self.addr + (last.slice_pitch * (last.depth - 1) +
                                        last.pitch * (last.height - 1) +
                                        last.width * self.texel_size)

    def level(self, lv: int) -> Texture:
        """Mip level ``lv`` (0 <= lv < levels) as a texture of one level."""
        return self if self.levels == 1 else _level(self, lv)

    @property
    def layers(self) -> int:
        """Layers a layer index selects among (1 for unlayered shapes)."""
        if self.shape in ("a1d", "a2d"):
            return self.depth
        return self.depth // 6 if self.shape == "acube" else 1

    @property
    def float_result(self) -> bool:
        """Whether fetches return floats (float formats or the normalised-float read mode)."""
        return self.dtype.kind == "f" or self.read_normalized


class Level(NamedTuple):
    """One mip level of a packed mipmapped resource: byte offset from level 0, extents,
    row and slice pitch in bytes."""

    offset: int
    width: int
    height: int
    depth: int
    pitch: int
    slice_pitch: int


def mip_layout(levels: int, width: int, height: int, depth: int, texel: int,
               shape: str) -> list[Level]:
    """The ``levels`` (at least 1) levels of a packed mipmapped resource whose level 0 is
    ``width x height`` texels of ``texel`` bytes in ``depth`` slices (1 for a plain
    resource) of shape ``shape`` (one of :data:`SHAPES`): width and height halve, floored,
    at least 1; the depth halves only in 3D; every level is packed right after the one
    before (libcuda's mipmapped arrays, cuda/mipmap.c, and the compiled engine's tex_level
    follow the same rule)."""
    out, off = [], 0
    for lv in range(levels):
        w, h = max(1, width >> lv), max(1, height >> lv)
        d = max(1, depth >> lv) if shape == "3d" else depth
        out.append(Level(off, w, h, d, w * texel, w * texel * h))
        off += w * texel * h * d
    return out


@functools.lru_cache(maxsize=256)
def _level(tex: Texture, lv: int) -> Texture:
    lay = mip_layout(lv + 1, tex.width, tex.height, tex.depth, tex.texel_size, tex.shape)[lv]
    return dataclasses.replace(tex, addr=tex.addr + lay.offset, width=lay.width,
                               height=lay.height, depth=lay.depth, pitch=lay.pitch,
                               slice_pitch=lay.slice_pitch if tex.shape != "plain" else 0,
                               levels=1)


class TextureTable:
    """The texture objects of one context, by opaque handle (see the module docstring)."""

    def __init__(self, limit: int = TEXTURES_PER_CONTEXT) -> None:
        self.limit = limit
        self._by_handle: dict[int, Texture] = {}

    def __len__(self) -> int:
        return len(self._by_handle)

    def create(self, tex: Texture) -> int:
        """Enter ``tex``; its new handle.  ENOSPC beyond ``limit`` objects."""
        if len(self._by_handle) >= self.limit:
            raise GdevError(errno.ENOSPC, f"{self.limit} texture objects already")
        while True:
            h = secrets.randbits(64)
            if h and h not in self._by_handle:
                self._by_handle[h] = tex
                return h

    def items(self) -> list[tuple[int, Texture]]:
        """(handle, texture) of every object, for the compiled engine's launch snapshot."""
        return list(self._by_handle.items())

    def destroy(self, handle: int) -> None:
        """Forget ``handle``; EINVAL if this context holds no such texture object."""
        if self._by_handle.pop(handle, None) is None:
            raise GdevError(errno.EINVAL, f"no texture object 0x{handle:x} in this context")

    def get(self, handle: int, surface: bool = False) -> Texture:
        """The texture (``surface``: the surface) object of ``handle``;
        :class:`TextureFault` if there is none (a kernel's stale, forged or foreign handle,
        or a texture used as a surface and the reverse)."""
        tex = self._by_handle.get(handle)
        if tex is None or tex.surface != surface:
            raise TextureFault("invalid surface object" if surface else
                               "invalid texture object")
        return tex
