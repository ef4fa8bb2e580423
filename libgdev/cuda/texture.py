"""Texture objects in the CUDA driver API: cuTexObjectCreate/Destroy/GetResourceDesc/
GetTextureDesc.

A CUtexObject is the opaque 64-bit handle of the daemon's per-context texture table
(``gtex_create``), passed to kernels as a ``.u64`` parameter.  The descriptors are CUDA's
structs as Python dataclasses with CUDA's member names; the resource union is flattened
(``devPtr``, ``format``, ``numChannels`` and ``sizeInBytes`` for a linear resource, plus
``width``, ``height`` and ``pitchInBytes`` for a pitch-2D one).  CUDA's driver semantics:
8- and 16-bit integer formats are read as normalised floats unless ``CU_TRSF_READ_AS_INTEGER``
is set; ``CU_TRSF_NORMALIZED_COORDINATES`` selects [0, 1) coordinates.  A CUDA array
resource is the pitch-2D memory the array is stored in (``array.py``) with its slices and
shape (``array3d.py``: 3D, layered, cubemap); mipmapped arrays and resource views are not
supported (CUDA_ERROR_NOT_SUPPORTED).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from libgdev import texture as T
from libgdev.messages import TexDesc

from .array import ELEMENT_SIZE, Array
from .array3d import Array3DAPI, shape_of
from .errors import CUresult, api, copy_api, fail

__all__ = [  # the names ``libgdev.cuda`` exports (with the entry points)
    "CUDA_RESOURCE_DESC", "CUDA_TEXTURE_DESC", "CU_RESOURCE_TYPE_ARRAY",
    "CU_RESOURCE_TYPE_MIPMAPPED_ARRAY", "CU_RESOURCE_TYPE_LINEAR", "CU_RESOURCE_TYPE_PITCH2D",
    "CU_AD_FORMAT_UNSIGNED_INT8", "CU_AD_FORMAT_UNSIGNED_INT16", "CU_AD_FORMAT_UNSIGNED_INT32",
    "CU_AD_FORMAT_SIGNED_INT8", "CU_AD_FORMAT_SIGNED_INT16", "CU_AD_FORMAT_SIGNED_INT32",
    "CU_AD_FORMAT_HALF", "CU_AD_FORMAT_FLOAT", "CU_TR_ADDRESS_MODE_WRAP",
    "CU_TR_ADDRESS_MODE_CLAMP", "CU_TR_ADDRESS_MODE_MIRROR", "CU_TR_ADDRESS_MODE_BORDER",
    "CU_TR_FILTER_MODE_POINT", "CU_TR_FILTER_MODE_LINEAR", "CU_TRSF_READ_AS_INTEGER",
    "CU_TRSF_NORMALIZED_COORDINATES", "TextureAPI",
]

CU_RESOURCE_TYPE_ARRAY = 0x00
CU_RESOURCE_TYPE_MIPMAPPED_ARRAY = 0x01
CU_RESOURCE_TYPE_LINEAR = T.TEX_RESOURCE_LINEAR
CU_RESOURCE_TYPE_PITCH2D = T.TEX_RESOURCE_PITCH2D
CU_AD_FORMAT_UNSIGNED_INT8 = T.TEX_FORMAT_U8
CU_AD_FORMAT_UNSIGNED_INT16 = T.TEX_FORMAT_U16
CU_AD_FORMAT_UNSIGNED_INT32 = T.TEX_FORMAT_U32
CU_AD_FORMAT_SIGNED_INT8 = T.TEX_FORMAT_S8
CU_AD_FORMAT_SIGNED_INT16 = T.TEX_FORMAT_S16
CU_AD_FORMAT_SIGNED_INT32 = T.TEX_FORMAT_S32
CU_AD_FORMAT_HALF = T.TEX_FORMAT_HALF
CU_AD_FORMAT_FLOAT = T.TEX_FORMAT_FLOAT
CU_TR_ADDRESS_MODE_WRAP = T.TEX_ADDRESS_WRAP
CU_TR_ADDRESS_MODE_CLAMP = T.TEX_ADDRESS_CLAMP
CU_TR_ADDRESS_MODE_MIRROR = T.TEX_ADDRESS_MIRROR
CU_TR_ADDRESS_MODE_BORDER = T.TEX_ADDRESS_BORDER
CU_TR_FILTER_MODE_POINT = 0
CU_TR_FILTER_MODE_LINEAR = 1
CU_TRSF_READ_AS_INTEGER = 0x01
CU_TRSF_NORMALIZED_COORDINATES = 0x02

_PROMOTED = (T.TEX_FORMAT_U8, T.TEX_FORMAT_S8, T.TEX_FORMAT_U16, T.TEX_FORMAT_S16)


@dataclass
class CUDA_RESOURCE_DESC:  # noqa: N801 - CUDA's name
    """CUDA_RESOURCE_DESC with its union flattened (see the module docstring)."""

    resType: int = CU_RESOURCE_TYPE_LINEAR  # noqa: N815 - CUDA's member names
    hArray: Any = None  # noqa: N815 - a CUarray (CU_RESOURCE_TYPE_ARRAY)
    devPtr: int = 0  # noqa: N815
    format: int = CU_AD_FORMAT_FLOAT
    numChannels: int = 1  # noqa: N815
    sizeInBytes: int = 0  # noqa: N815
    width: int = 0
    height: int = 0
    pitchInBytes: int = 0  # noqa: N815
    flags: int = 0


@dataclass
class CUDA_TEXTURE_DESC:  # noqa: N801 - CUDA's name
    """CUDA_TEXTURE_DESC (mipmap and anisotropy fields are kept, and have no effect)."""

    addressMode: tuple[int, int, int] = (CU_TR_ADDRESS_MODE_WRAP,) * 3  # noqa: N815
    filterMode: int = CU_TR_FILTER_MODE_POINT  # noqa: N815
    flags: int = 0
    maxAnisotropy: int = 0  # noqa: N815
    mipmapFilterMode: int = CU_TR_FILTER_MODE_POINT  # noqa: N815
    mipmapLevelBias: float = 0.0  # noqa: N815
    minMipmapLevelClamp: float = 0.0  # noqa: N815
    maxMipmapLevelClamp: float = 0.0  # noqa: N815
    borderColor: tuple[float, float, float, float] = field(  # noqa: N815
        default=(0.0, 0.0, 0.0, 0.0))


def wire_desc(res: CUDA_RESOURCE_DESC, tex: CUDA_TEXTURE_DESC) -> TexDesc:
    """The daemon's descriptor (``libgdev.texture``) of CUDA's two; CudaError when CUDA
    would refuse them before the device is asked."""
    if res.resType == CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
        raise fail(CUresult.CUDA_ERROR_NOT_SUPPORTED, "mipmapped array resources")
    if res.flags or res.format not in ELEMENT_SIZE or res.numChannels not in (1, 2, 4):
        raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"resource {res}")
    if tex.filterMode not in (CU_TR_FILTER_MODE_POINT, CU_TR_FILTER_MODE_LINEAR) or \
            tex.flags & ~(CU_TRSF_READ_AS_INTEGER | CU_TRSF_NORMALIZED_COORDINATES | 0x30):
        raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"texture {tex}")
    texel = ELEMENT_SIZE[res.format] * res.numChannels
    linear = res.resType == CU_RESOURCE_TYPE_LINEAR
    return T.tex_desc(
        res.resType, res.devPtr, res.format, res.numChannels,
        res.sizeInBytes // texel if linear else res.width, 1 if linear else res.height,
        0 if linear else res.pitchInBytes, modes=tuple(tex.addressMode),
        linear=tex.filterMode == CU_TR_FILTER_MODE_LINEAR,
        normalized_coords=bool(tex.flags & CU_TRSF_NORMALIZED_COORDINATES),
        read_normalized=res.format in _PROMOTED and not tex.flags & CU_TRSF_READ_AS_INTEGER,
        border=tuple(tex.borderColor))


def _array_as_pitch2d(arr: Array) -> CUDA_RESOURCE_DESC:
    """The pitch-2D resource an array's storage is (array.py: packed rows)."""
    d = arr.desc
    return CUDA_RESOURCE_DESC(CU_RESOURCE_TYPE_PITCH2D, devPtr=arr.ptr, format=d.Format,
                              numChannels=d.NumChannels, width=d.Width, height=arr.rows,
                              pitchInBytes=arr.pitch)


def _with_slices(desc: TexDesc, arr: Array) -> TexDesc:
    """``desc`` over array ``arr`` with the array's shape, slices and slice pitch."""
    shape = shape_of(arr)
    if shape == T.TEX_SHAPE_PLAIN:
        return desc
    return desc._replace(shape=shape, depth=arr.slices, slice_pitch=arr.slice_pitch)


class TextureAPI(Array3DAPI):
    """cuTexObject* entry points (mixed into the driver)."""

    def _texture(self, obj: int) -> tuple[CUDA_RESOURCE_DESC, CUDA_TEXTURE_DESC]:
        ctx = self._current()
        entry: tuple[CUDA_RESOURCE_DESC, CUDA_TEXTURE_DESC] | None = \
            ctx.scratch.get("textures", {}).get(obj)
        if entry is None:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"no texture object {obj:#x}")
        return entry

    @copy_api   # its EFAULT: the texels run past their allocation (a bad argument)
    def cuTexObjectCreate(self, pResDesc: CUDA_RESOURCE_DESC, pTexDesc: CUDA_TEXTURE_DESC,
                          pResViewDesc: object = None) -> int:
        """Create a texture object in the current context; the CUtexObject (an int)."""
        if pResViewDesc is not None:
            raise fail(CUresult.CUDA_ERROR_NOT_SUPPORTED, "resource views")
        ctx = self._current()
        res = pResDesc
        if res.resType == CU_RESOURCE_TYPE_ARRAY:
            arr = self._array(res.hArray)
            desc = _with_slices(wire_desc(_array_as_pitch2d(arr), pTexDesc), arr)
        else:
            desc = wire_desc(res, pTexDesc)
        with ctx.lock:
            obj = int(ctx.backend.gtex_create(ctx.handle, desc))
            ctx.scratch.setdefault("textures", {})[obj] = (replace(pResDesc), replace(pTexDesc))
        return obj

    @copy_api
    def cuSurfObjectCreate(self, pResDesc: CUDA_RESOURCE_DESC) -> int:
        """Create a surface object over an array (``CU_RESOURCE_TYPE_ARRAY``, as CUDA
        requires) in the current context; the CUsurfObject (an int) for suld/sust."""
        if pResDesc.resType != CU_RESOURCE_TYPE_ARRAY:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, "surfaces need an array resource")
        ctx = self._current()
        arr = self._array(pResDesc.hArray)
        res = _array_as_pitch2d(arr)
        desc = _with_slices(T.tex_desc(res.resType, res.devPtr, res.format, res.numChannels,
                                       res.width, res.height, res.pitchInBytes, surface=True),
                            arr)
        with ctx.lock:
            obj = int(ctx.backend.gtex_create(ctx.handle, desc))
            ctx.scratch.setdefault("textures", {})[obj] = (replace(pResDesc),
                                                          CUDA_TEXTURE_DESC())
        return obj

    @api
    def cuSurfObjectDestroy(self, surfObject: int) -> None:
        """Destroy a surface object of the current context."""
        self.cuTexObjectDestroy(surfObject)

    @api
    def cuSurfObjectGetResourceDesc(self, surfObject: int) -> CUDA_RESOURCE_DESC:
        """The resource descriptor ``surfObject`` was created with."""
        return replace(self._texture(surfObject)[0])

    @api
    def cuTexObjectDestroy(self, texObject: int) -> None:
        """Destroy a texture object of the current context."""
        ctx = self._current()
        self._texture(texObject)
        with ctx.lock:
            ctx.backend.gtex_destroy(ctx.handle, texObject)
            del ctx.scratch["textures"][texObject]

    @api
    def cuTexObjectGetResourceDesc(self, texObject: int) -> CUDA_RESOURCE_DESC:
        """The resource descriptor ``texObject`` was created with."""
        return replace(self._texture(texObject)[0])

    @api
    def cuTexObjectGetTextureDesc(self, texObject: int) -> CUDA_TEXTURE_DESC:
        """The texture descriptor ``texObject`` was created with."""
        return replace(self._texture(texObject)[1])
