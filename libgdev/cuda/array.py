"""CUDA arrays: cuArrayCreate/Destroy/GetDescriptor, cuMemcpy2D, cuMemcpyHtoA/AtoH.

An array is stored pitch-linear in one device allocation of its context: ``Height`` rows
(one for a 1D array, ``Height`` 0) of ``Width`` texels, packed, in each of its slices
(``array3d.py``: 3D, layered and cubemap arrays) (the pitch is one row of
texels; nothing outside the library sees the layout, as with CUDA's opaque layouts).  A
texture object over an array (``CU_RESOURCE_TYPE_ARRAY``) is a pitch-2D texture over that
memory; 1D arrays are one row, so their fetches use the address modes of dimension 0.
``cuMemcpy2D`` copies row by row between host, device and array memory.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from .core import Context, DriverCore
from .errors import CUresult, api, copy_api, fail

CU_MEMORYTYPE_HOST = 0x01
CU_MEMORYTYPE_DEVICE = 0x02
CU_MEMORYTYPE_ARRAY = 0x03
ELEMENT_SIZE = {0x01: 1, 0x08: 1, 0x02: 2, 0x09: 2, 0x10: 2, 0x03: 4, 0x0A: 4, 0x20: 4}

__all__ = ["CUDA_ARRAY_DESCRIPTOR", "CUDA_MEMCPY2D", "CU_MEMORYTYPE_HOST",
           "CU_MEMORYTYPE_DEVICE", "CU_MEMORYTYPE_ARRAY", "Array", "ArrayAPI"]


@dataclass
class CUDA_ARRAY_DESCRIPTOR:  # noqa: N801 - CUDA's name
    """CUDA_ARRAY_DESCRIPTOR: width and height (0: a 1D array) in texels, format, channels."""

    Width: int = 0  # noqa: N815 - CUDA's member names
    Height: int = 0  # noqa: N815
    Format: int = 0x20  # noqa: N815 - CU_AD_FORMAT_FLOAT
    NumChannels: int = 1  # noqa: N815


@dataclass
class CUDA_MEMCPY2D:  # noqa: N801 - CUDA's name
    """CUDA_MEMCPY2D: a rectangle of ``Height`` rows of ``WidthInBytes`` bytes."""

    srcMemoryType: int = CU_MEMORYTYPE_HOST  # noqa: N815
    srcHost: Any = None  # noqa: N815
    srcDevice: int = 0  # noqa: N815
    srcArray: Any = None  # noqa: N815
    srcXInBytes: int = 0  # noqa: N815
    srcY: int = 0  # noqa: N815
    srcPitch: int = 0  # noqa: N815
    dstMemoryType: int = CU_MEMORYTYPE_HOST  # noqa: N815
    dstHost: Any = None  # noqa: N815
    dstDevice: int = 0  # noqa: N815
    dstArray: Any = None  # noqa: N815
    dstXInBytes: int = 0  # noqa: N815
    dstY: int = 0  # noqa: N815
    dstPitch: int = 0  # noqa: N815
    WidthInBytes: int = 0  # noqa: N815
    Height: int = 0  # noqa: N815


class Array:
    """A CUarray: its context, descriptor, device memory and pitch (see the docstring)."""

    def __init__(self, ctx: Context, desc: CUDA_ARRAY_DESCRIPTOR, ptr: int, pitch: int,
                 depth: int = 0, flags: int = 0) -> None:
        self.ctx, self.desc, self.ptr, self.pitch = ctx, desc, ptr, pitch
        self.depth, self.flags = depth, flags      # cuArray3DCreate's Depth and Flags
        self.destroyed = False

    @property
    def rows(self) -> int:
        """Rows of storage (1 for a 1D array)."""
        return max(1, self.desc.Height)

    @property
    def slices(self) -> int:
        """Slices of storage (1 for a 1D or 2D array), ``slice_pitch`` bytes apart."""
        return max(1, self.depth)

    @property
    def slice_pitch(self) -> int:
        """Bytes from one slice to the next (the rows are packed)."""
        return self.pitch * self.rows

    def __repr__(self) -> str:
        d = self.desc
        return f"<CUarray {d.Width}x{d.Height} format={d.Format:#x}x{d.NumChannels}>"


def _bytes(buf: Any, writable: bool) -> memoryview:
    view = memoryview(buf)
    if writable and view.readonly:
        raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, "read-only destination")
    return view.cast("B") if view.ndim != 1 or view.format != "B" else view


class ArrayAPI(DriverCore):
    """cuArray* and cuMemcpy2D entry points (mixed into the driver)."""

    def _array(self, arr: Any) -> Array:
        ctx = self._current()
        if not isinstance(arr, Array) or arr.destroyed or arr.ctx is not ctx:
            raise fail(CUresult.CUDA_ERROR_INVALID_HANDLE, f"bad array {arr!r}")
        return arr

    def _array_range(self, arr: Any, offset: int, count: int) -> Array:
        a = self._array(arr)
        if offset < 0 or count < 0 or offset + count > a.slice_pitch * a.slices:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, "range outside the array")
        return a

    def _new_array(self, d: CUDA_ARRAY_DESCRIPTOR, depth: int = 0, flags: int = 0) -> Array:
        """A new array of ``max(depth, 1)`` slices of ``d`` in the current context."""
        if d.Format not in ELEMENT_SIZE or d.NumChannels not in (1, 2, 4) or d.Width <= 0 \
                or d.Height < 0 or depth < 0:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"array descriptor {d}")
        pitch = d.Width * ELEMENT_SIZE[d.Format] * d.NumChannels
        ctx = self._current()
        size = pitch * max(1, d.Height) * max(1, depth)
        ptr = int(ctx.backend.gmalloc(ctx.handle, size))
        ctx.mem[ptr] = size     # an allocation like cuMemAlloc's (cuMemGetAddressRange)
        return Array(ctx, d, ptr, pitch, depth, flags)

    @api
    def cuArrayCreate(self, pAllocateArray: CUDA_ARRAY_DESCRIPTOR) -> Array:
        """Create a 1D (``Height`` 0) or 2D array in the current context."""
        return self._new_array(replace(pAllocateArray))

    @api
    def cuArrayDestroy(self, hArray: Array) -> None:
        """Free an array (work issued before completes first)."""
        arr = self._array(hArray)
        arr.ctx.backend.gfree(arr.ctx.handle, arr.ptr)
        del arr.ctx.mem[arr.ptr]
        arr.destroyed = True

    @api
    def cuArrayGetDescriptor(self, hArray: Array) -> CUDA_ARRAY_DESCRIPTOR:
        """The descriptor the array was created with."""
        return replace(self._array(hArray).desc)

    def _side(self, kind: int, host: Any, dev: int, arr: Any, x: int, y: int, pitch: int,
              width: int, height: int, writable: bool) -> tuple[memoryview | None, int, int]:
        """(host view or None, device address of row 0, pitch) of one side of a 2D copy."""
        if kind == CU_MEMORYTYPE_ARRAY:
            a = self._array(arr)
            if x + width > a.pitch or y + height > a.rows:
                raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, "rectangle outside the array")
            return None, a.ptr + y * a.pitch + x, a.pitch
        if pitch < width and height > 1:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"pitch {pitch} < width {width}")
        if kind == CU_MEMORYTYPE_DEVICE:
            return None, dev + y * pitch + x, pitch
        if kind != CU_MEMORYTYPE_HOST:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"memory type {kind}")
        view = _bytes(host, writable)
        start = y * pitch + x
        if height and start + (height - 1) * pitch + width > len(view):
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, "rectangle outside the host buffer")
        return view[start:], 0, pitch

    @copy_api
    def cuMemcpy2D(self, pCopy: CUDA_MEMCPY2D) -> None:
        """Copy a rectangle between host, device and array memory, row by row."""
        c, ctx = pCopy, self._current()
        w, h = c.WidthInBytes, c.Height
        sv, sa, sp = self._side(c.srcMemoryType, c.srcHost, c.srcDevice, c.srcArray,
                                c.srcXInBytes, c.srcY, c.srcPitch, w, h, False)
        dv, da, dp = self._side(c.dstMemoryType, c.dstHost, c.dstDevice, c.dstArray,
                                c.dstXInBytes, c.dstY, c.dstPitch, w, h, True)
        b, hd = ctx.backend, ctx.handle
        for row in range(h if w else 0):
            if sv is not None and dv is not None:
                dv[row * dp:row * dp + w] = sv[row * sp:row * sp + w]
            elif sv is not None:
                b.gmemcpy_to_device(hd, da + row * dp, sv[row * sp:row * sp + w], w)
            elif dv is not None:
                b.gmemcpy_from_device(hd, dv[row * dp:row * dp + w], sa + row * sp, w)
            else:
                b.gmemcpy(hd, da + row * dp, sa + row * sp, w)

    @copy_api
    def cuMemcpyHtoA(self, dstArray: Array, dstOffset: int, srcHost: Any,
                     ByteCount: int) -> None:
        """Copy ``ByteCount`` bytes of host memory into an array at byte ``dstOffset``."""
        a = self._array_range(dstArray, dstOffset, ByteCount)
        if ByteCount:
            a.ctx.backend.gmemcpy_to_device(a.ctx.handle, a.ptr + dstOffset,
                                            _bytes(srcHost, False)[:ByteCount], ByteCount)

    @copy_api
    def cuMemcpyAtoH(self, dstHost: Any, srcArray: Array, srcOffset: int,
                     ByteCount: int) -> None:
        """Copy ``ByteCount`` bytes of an array from byte ``srcOffset`` into host memory."""
        a = self._array_range(srcArray, srcOffset, ByteCount)
        if ByteCount:
            a.ctx.backend.gmemcpy_from_device(a.ctx.handle, _bytes(dstHost, True)[:ByteCount],
                                              a.ptr + srcOffset, ByteCount)
