"""CUDA arrays with slices: cuArray3DCreate/GetDescriptor and cuMemcpy3D.

A 3D array (``Depth`` > 0), a layered one (``CUDA_ARRAY3D_LAYERED``: ``Depth`` layers,
``Height`` 0 for 1D layers), a cubemap (``CUDA_ARRAY3D_CUBEMAP``: 6 square faces) and a
layered cubemap (both flags, ``Depth`` a multiple of 6) are ``Depth`` slices of packed rows
in one allocation (``array.py``); ``CUDA_ARRAY3D_SURFACE_LDST`` is accepted (any array can
back a surface).  CUDA's limits apply (``TEXTURE_LIMITS``); gather, sparse and other flags
are CUDA_ERROR_NOT_SUPPORTED.  ``cuMemcpy3D`` copies a box slice by slice, row by row, between
host, device and array memory, the whole box checked first.  A texture or surface object
over such an array has its shape (``texture.py``, ``shape_of``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from libgdev import texture as T

from .array import CU_MEMORYTYPE_ARRAY, CUDA_ARRAY_DESCRIPTOR, CUDA_MEMCPY2D, Array, ArrayAPI
from .errors import CUresult, api, copy_api, fail

CUDA_ARRAY3D_LAYERED = 0x01
CUDA_ARRAY3D_SURFACE_LDST = 0x02
CUDA_ARRAY3D_CUBEMAP = 0x04
_OURS = CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST | CUDA_ARRAY3D_CUBEMAP

__all__ = ["CUDA_ARRAY3D_DESCRIPTOR", "CUDA_MEMCPY3D", "CUDA_ARRAY3D_LAYERED",
           "CUDA_ARRAY3D_SURFACE_LDST", "CUDA_ARRAY3D_CUBEMAP", "Array3DAPI", "shape_of"]


@dataclass
class CUDA_ARRAY3D_DESCRIPTOR:  # noqa: N801 - CUDA's name
    """CUDA_ARRAY3D_DESCRIPTOR: width, height, depth (0: 1D/2D) in texels, format, channels,
    CUDA_ARRAY3D_* flags."""

    Width: int = 0  # noqa: N815 - CUDA's member names
    Height: int = 0  # noqa: N815
    Depth: int = 0  # noqa: N815
    Format: int = 0x20  # noqa: N815 - CU_AD_FORMAT_FLOAT
    NumChannels: int = 1  # noqa: N815
    Flags: int = 0  # noqa: N815


@dataclass
class CUDA_MEMCPY3D(CUDA_MEMCPY2D):  # noqa: N801 - CUDA's name
    """CUDA_MEMCPY3D: ``Depth`` slices of a 2D copy; ``srcZ``/``dstZ`` the first slice,
    ``srcHeight``/``dstHeight`` the rows per slice of linear memory."""

    srcZ: int = 0  # noqa: N815
    srcHeight: int = 0  # noqa: N815
    dstZ: int = 0  # noqa: N815
    dstHeight: int = 0  # noqa: N815
    Depth: int = 1  # noqa: N815


def _within_limits(d: CUDA_ARRAY3D_DESCRIPTOR) -> bool:
    """CUDA's maxTexture3D, maxTexture*Layered and maxTextureCubemap* for descriptor ``d``."""
    shape = d.Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)
    if shape == CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP:
        return d.Width == d.Height <= 32768 and 0 < d.Depth <= 6 * 2046 and d.Depth % 6 == 0
    if shape == CUDA_ARRAY3D_CUBEMAP:
        return d.Width == d.Height <= 32768 and d.Depth == 6
    if shape == CUDA_ARRAY3D_LAYERED:
        return 0 < d.Depth <= 2048 and d.Width <= 32768 and d.Height <= 32768
    return not d.Depth or (0 < d.Height <= 16384 and d.Width <= 16384 and d.Depth <= 16384)


def shape_of(arr: Array) -> int:
    """The ``TEX_SHAPE_*`` of a texture or surface over ``arr``."""
    shape = arr.flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)
    if shape == CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP:
        return T.TEX_SHAPE_CUBEMAP_LAYERED
    if shape == CUDA_ARRAY3D_CUBEMAP:
        return T.TEX_SHAPE_CUBEMAP
    if shape == CUDA_ARRAY3D_LAYERED:
        return T.TEX_SHAPE_LAYERED_2D if arr.desc.Height else T.TEX_SHAPE_LAYERED_1D
    return T.TEX_SHAPE_3D if arr.depth else T.TEX_SHAPE_PLAIN


class Array3DAPI(ArrayAPI):
    """cuArray3D* and cuMemcpy3D entry points (mixed into the driver)."""

    @api
    def cuArray3DCreate(self, pAllocateArray: CUDA_ARRAY3D_DESCRIPTOR) -> Array:
        """Create a 1D, 2D, 3D, layered or cubemap array in the current context."""
        d = replace(pAllocateArray)
        if d.Flags & ~_OURS:
            raise fail(CUresult.CUDA_ERROR_NOT_SUPPORTED, f"array flags {d.Flags & ~_OURS:#x}")
        if not _within_limits(d):
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"array descriptor {d}")
        return self._new_array(CUDA_ARRAY_DESCRIPTOR(d.Width, d.Height, d.Format,
                                                     d.NumChannels), d.Depth, d.Flags)

    @api
    def cuArray3DGetDescriptor(self, hArray: Array) -> CUDA_ARRAY3D_DESCRIPTOR:
        """The 3D descriptor the array was created with (``Depth`` 0 for 1D and 2D)."""
        a = self._array(hArray)
        return CUDA_ARRAY3D_DESCRIPTOR(a.desc.Width, a.desc.Height, a.depth, a.desc.Format,
                                       a.desc.NumChannels, a.flags)

    def _check_side(self, kind: int, arr: Any, x: int, y: int, z: int, c: CUDA_MEMCPY3D,
                    height: int) -> None:
        """Refuse a side of ``c`` whose box leaves its array, or whose linear slices are
        shorter than the rows the copy reads."""
        if kind != CU_MEMORYTYPE_ARRAY:
            if c.Depth > 1 and height < y + c.Height:
                raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, "slice height below Y + Height")
            return
        a = self._array(arr)
        if x + c.WidthInBytes > a.pitch or y + c.Height > a.rows or z < 0 or \
                z + max(c.Depth, 1) > a.slices:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, "box outside the array")

    @copy_api
    def cuMemcpy3D(self, pCopy: CUDA_MEMCPY3D) -> None:
        """Copy a box, slice by slice, between host, device and array memory."""
        c = pCopy
        self._check_side(c.srcMemoryType, c.srcArray, c.srcXInBytes, c.srcY, c.srcZ, c,
                         c.srcHeight)
        self._check_side(c.dstMemoryType, c.dstArray, c.dstXInBytes, c.dstY, c.dstZ, c,
                         c.dstHeight)
        for k in range(c.Depth if c.WidthInBytes and c.Height else 0):
            self.cuMemcpy2D(self._slice(c, k))

    def _slice(self, c: CUDA_MEMCPY3D, k: int) -> CUDA_MEMCPY2D:
        """Slice ``k`` of copy ``c`` as a 2D copy (an array's slice as its device memory)."""
        sides = {}
        for side in ("src", "dst"):
            kind, z = getattr(c, f"{side}MemoryType"), getattr(c, f"{side}Z") + k
            if kind == CU_MEMORYTYPE_ARRAY:
                a = self._array(getattr(c, f"{side}Array"))
                sides[side] = dict(MemoryType=2, Device=a.ptr + z * a.slice_pitch,
                                   Pitch=a.pitch, Array=None, Host=getattr(c, f"{side}Host"))
                continue
            step = z * getattr(c, f"{side}Pitch") * getattr(c, f"{side}Height")
            host = getattr(c, f"{side}Host")
            if host is not None and step:
                host = memoryview(host).cast("B")[step:]
            sides[side] = dict(MemoryType=kind, Device=getattr(c, f"{side}Device") + step,
                               Pitch=getattr(c, f"{side}Pitch"), Array=None, Host=host)
        return CUDA_MEMCPY2D(
            **{f"{s}{k_}": v for s, d in sides.items() for k_, v in d.items()},
            srcXInBytes=c.srcXInBytes, srcY=c.srcY, dstXInBytes=c.dstXInBytes, dstY=c.dstY,
            WidthInBytes=c.WidthInBytes, Height=c.Height)
