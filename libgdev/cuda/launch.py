"""Kernel launch: cuLaunchKernel and the legacy cuParamSet*/cuFuncSetBlockShape/cuLaunchGrid.

A launch builds Gdev's descriptor (``GdevKernel``: the module's code and data addresses, the
entry name, geometry, dynamic shared memory and the parameter buffer) and calls ``glaunch``,
ordered in its stream.  Parameters are packed by the layout the PTX declares
(``KernelInfo.params``: offset and size of each): ints (device pointers included) as
little-endian integers of the declared size, Python floats as f16/f32/f64 by size, numpy
scalars and bytes-like values verbatim (their size must match).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

from .core import DriverCore
from .errors import CUresult, api, fail

_FLOAT_FORMATS = {2: "<e", 4: "<f", 8: "<d"}
MAX_PARAM_BYTES = 4096  # the driver API's limit on a kernel's parameter buffer


def pack_value(value: Any, size: int) -> bytes:
    """Encode one kernel argument as ``size`` bytes; INVALID_VALUE if it does not fit."""
    if isinstance(value, np.generic):
        raw = value.tobytes()
    elif isinstance(value, bool | int):
        lo = -(1 << (8 * size - 1))
        if not lo <= int(value) < (1 << (8 * size)):
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"{value} does not fit {size} bytes")
        raw = (int(value) % (1 << (8 * size))).to_bytes(size, "little")
    elif isinstance(value, float):
        if size not in _FLOAT_FORMATS:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"float for a {size}-byte parameter")
        raw = struct.pack(_FLOAT_FORMATS[size], value)
    else:
        try:
            raw = bytes(memoryview(value))
        except TypeError:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"argument {value!r}") from None
    if len(raw) != size:
        raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"{len(raw)} bytes for a {size}-byte param")
    return raw


def pack_params(info: Any, values: Sequence[Any]) -> bytes:
    """The parameter buffer of kernel ``info`` holding ``values`` in declaration order."""
    params = list(info.params)
    if len(values) != len(params):
        raise fail(CUresult.CUDA_ERROR_INVALID_VALUE,
                   f"{info.name} takes {len(params)} arguments, got {len(values)}")
    buf = bytearray(int(info.param_size))
    for p, v in zip(params, values, strict=True):
        buf[p.offset:p.offset + p.size] = pack_value(v, p.size)
    return bytes(buf)


def _dims(*dims: int) -> tuple[int, int, int]:
    if any(isinstance(d, bool) or int(d) <= 0 for d in dims):
        raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"bad dimensions {dims}")
    return tuple(int(d) for d in dims)  # type: ignore[return-value]


class Function:
    """A CUfunction: one kernel of a module, with its legacy launch state."""

    def __init__(self, module: Any, info: Any) -> None:
        self.module = module
        self.info = info
        self.block: tuple[int, int, int] | None = None  # cuFuncSetBlockShape
        self.shared_size = 0  # cuFuncSetSharedSize
        self.param_buf = bytearray(MAX_PARAM_BYTES)  # cuParamSet*
        self.param_size = 0  # cuParamSetSize
        self.param_end = max((p.offset + p.size for p in info.params), default=0)

    @property
    def name(self) -> str:
        """The kernel's entry name."""
        return str(self.info.name)

    def __repr__(self) -> str:
        return f"<CUfunction {self.name}>"


class LaunchAPI(DriverCore):
    """Launch entry points (mixed into the driver)."""

    def _function(self, f: Any) -> Function:
        if not isinstance(f, Function) or f.module.unloaded:
            raise fail(CUresult.CUDA_ERROR_INVALID_HANDLE, f"bad function {f!r}")
        self._module(f.module)  # current-context check
        return f

    def _launch(self, f: Function, grid: Any, block: Any, shared: int, hstream: Any,
                params: bytes) -> int:
        s = self._stream(hstream)
        if shared < 0:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"shared {shared}")
        mod = f.module
        kernel = s.ctx.backend.make_kernel(
            code_addr=mod.code_addr, code_size=mod.code_size, data_addr=mod.data_addr,
            name=f.name, grid=grid, block=block, shared_dynamic=shared, params=params)
        with s.ctx.lock:
            fence = int(s.ctx.backend.glaunch(s.ctx.handle, kernel))
            s.record(fence)
        return fence

    @api
    def cuLaunchKernel(self, f: Function, gridDimX: int, gridDimY: int, gridDimZ: int,
                       blockDimX: int, blockDimY: int, blockDimZ: int,
                       sharedMemBytes: int, hStream: Any,
                       kernelParams: Sequence[Any] = ()) -> None:
        """Launch ``f`` on a grid of blocks in ``hStream`` with ``kernelParams`` (packed by
        the kernel's declared parameter layout); returns once queued."""
        f = self._function(f)
        params = pack_params(f.info, kernelParams)
        self._launch(f, _dims(gridDimX, gridDimY, gridDimZ),
                     _dims(blockDimX, blockDimY, blockDimZ), sharedMemBytes, hStream, params)

    @api
    def cuFuncSetBlockShape(self, f: Function, x: int, y: int, z: int) -> None:
        """Legacy: set the block shape used by cuLaunch/cuLaunchGrid."""
        self._function(f).block = _dims(x, y, z)

    @api
    def cuFuncSetSharedSize(self, f: Function, nbytes: int) -> None:
        """Legacy: set the dynamic shared memory of later cuLaunch/cuLaunchGrid calls."""
        if nbytes < 0:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"shared {nbytes}")
        self._function(f).shared_size = nbytes

    @api
    def cuParamSetSize(self, f: Function, numbytes: int) -> None:
        """Legacy: the total size of the parameters (must cover the kernel's at launch)."""
        f = self._function(f)
        if not 0 <= numbytes <= MAX_PARAM_BYTES:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"param size {numbytes}")
        f.param_size = numbytes

    def _param_put(self, f: Function, offset: int, raw: bytes) -> None:
        f = self._function(f)
        if offset < 0 or offset + len(raw) > len(f.param_buf):
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE,
                       f"{len(raw)} bytes at offset {offset} of {len(f.param_buf)}")
        f.param_buf[offset:offset + len(raw)] = raw

    @api
    def cuParamSeti(self, f: Function, offset: int, value: int) -> None:
        """Legacy: store a 32-bit integer parameter at ``offset``."""
        self._param_put(f, offset, pack_value(int(value), 4))

    @api
    def cuParamSetf(self, f: Function, offset: int, value: float) -> None:
        """Legacy: store a 32-bit float parameter at ``offset``."""
        self._param_put(f, offset, pack_value(float(value), 4))

    @api
    def cuParamSetv(self, f: Function, offset: int, data: Any, numbytes: int | None = None) -> None:
        """Legacy: store raw bytes (e.g. a 64-bit pointer) at ``offset``."""
        raw = bytes(memoryview(data).cast("B"))
        self._param_put(f, offset, raw if numbytes is None else raw[:numbytes])

    def _legacy(self, f: Function, gw: int, gh: int, hstream: Any) -> None:
        f = self._function(f)
        if f.block is None:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"{f!r}: no cuFuncSetBlockShape")
        if f.param_size < f.param_end:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE,
                       f"{f!r}: cuParamSetSize({f.param_size}), its parameters need {f.param_end}")
        params = bytes(f.param_buf[:int(f.info.param_size)])
        self._launch(f, _dims(gw, gh, 1), f.block, f.shared_size, hstream, params)

    @api
    def cuLaunch(self, f: Function) -> None:
        """Legacy: launch ``f`` on a 1x1 grid."""
        self._legacy(f, 1, 1, None)

    @api
    def cuLaunchGrid(self, f: Function, grid_width: int, grid_height: int) -> None:
        """Legacy: launch ``f`` on a grid_width x grid_height grid in the NULL stream."""
        self._legacy(f, grid_width, grid_height, None)

    @api
    def cuLaunchGridAsync(self, f: Function, grid_width: int, grid_height: int,
                          hstream: Any) -> None:
        """Legacy: cuLaunchGrid in ``hstream``."""
        self._legacy(f, grid_width, grid_height, hstream)
