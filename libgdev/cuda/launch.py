"""Kernel launch: cuLaunchKernel and the legacy cuParamSet*/cuFuncSetBlockShape/cuLaunchGrid.

A launch names the function by (module id, index in the module's function table) and passes
geometry, dynamic shared memory and the parameter buffer (``gmodule_launch``), ordered in
its stream.  Parameters are packed by the layout the daemon reported
(:class:`libgdev.moduletable.Function`: offset, size and PTX type of each): ints (device
pointers included) as little-endian integers of the declared size, Python floats as
f16/f32/f64 by size, numpy scalars and bytes-like values verbatim (their size must match).
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

from libgdev.kernel import coresident_blocks_per_mp

from .core import DriverCore
from .errors import CUresult, api, fail

_FLOAT_FORMATS = {2: "<e", 4: "<f", 8: "<d"}
SHARED_PER_BLOCK = 64 * 1024  # the engine's limit, static + dynamic


class CUfunction_attribute(enum.IntEnum):
    """cuFuncGetAttribute's attributes, with CUDA's numeric values."""

    MAX_THREADS_PER_BLOCK = 0
    SHARED_SIZE_BYTES = 1
    CONST_SIZE_BYTES = 2
    LOCAL_SIZE_BYTES = 3
    NUM_REGS = 4
    PTX_VERSION = 5
    BINARY_VERSION = 6
    MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
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
    for i, (p, v) in enumerate(zip(params, values, strict=True)):
        _check_kind(info.name, i, getattr(p, "type", ""), v)
        buf[p.offset:p.offset + p.size] = pack_value(v, p.size)
    return bytes(buf)


def _check_kind(kernel: str, index: int, ptype: str, value: Any) -> None:
    """Refuse a Python int for a floating-point parameter and a Python float for an integer
    one (their bits would be reinterpreted); numpy scalars and bytes pass as they are."""
    if isinstance(value, float) and ptype[:1] in ("s", "u"):
        raise fail(CUresult.CUDA_ERROR_INVALID_VALUE,
                   f"argument {index} of {kernel} is .{ptype}: got the float {value!r} "
                   f"(pass an int, or a numpy scalar for raw bits)")
    if isinstance(value, int) and not isinstance(value, bool) and ptype[:1] == "f":
        raise fail(CUresult.CUDA_ERROR_INVALID_VALUE,
                   f"argument {index} of {kernel} is .{ptype}: got the int {value!r} "
                   f"(pass {float(value)!r}, or a numpy scalar for raw bits)")


def _extra_buffer(f: Function, extra: Any) -> bytes:
    raw = bytes(memoryview(extra).cast("B"))
    if len(raw) < f.param_end:
        raise fail(CUresult.CUDA_ERROR_INVALID_VALUE,
                   f"{len(raw)} parameter bytes, {f.name} needs {f.param_end}")
    return raw[:int(f.info.param_size)].ljust(int(f.info.param_size), b"\0")


def _dims(*dims: int) -> tuple[int, int, int]:
    if any(isinstance(d, bool) or int(d) <= 0 for d in dims):
        raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"bad dimensions {dims}")
    return tuple(int(d) for d in dims)  # type: ignore[return-value]


class Function:
    """A CUfunction: kernel ``index`` of a module's table, with its legacy launch state."""

    def __init__(self, module: Any, index: int, info: Any) -> None:
        self.module = module
        self.index = index
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

    def attribute(self, attrib: int) -> int:
        """The value of a CUfunction_attribute (INVALID_VALUE for others)."""
        info, mod = self.info, self.module
        A = CUfunction_attribute
        values: dict[int, int] = {
            A.MAX_THREADS_PER_BLOCK: info.max_threads,
            A.SHARED_SIZE_BYTES: info.static_shared,
            A.CONST_SIZE_BYTES: info.const_size,
            A.LOCAL_SIZE_BYTES: info.local_size,
            A.NUM_REGS: info.num_regs,
            # CUDA's PTX_VERSION is the virtual architecture (75 for compute_75 code; CUB
            # picks its tuning policy by it), BINARY_VERSION the device's, which the PTX
            # is compiled for when it loads
            A.PTX_VERSION: mod.versions[1],
            A.BINARY_VERSION: _device_sm(mod),
            A.MAX_DYNAMIC_SHARED_SIZE_BYTES: info.max_dynamic_shared,
        }
        if attrib not in values:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"function attribute {attrib}")
        return int(values[attrib])

    def __repr__(self) -> str:
        return f"<CUfunction {self.name}>"


def _device_sm(mod: Any) -> int:
    major, minor = mod.ctx.driver._info(mod.ctx.device).capability
    return int(10 * major + minor)


class LaunchAPI(DriverCore):
    """Launch entry points (mixed into the driver)."""

    def _function(self, f: Any) -> Function:
        if not isinstance(f, Function) or f.module.unloaded:
            raise fail(CUresult.CUDA_ERROR_INVALID_HANDLE, f"bad function {f!r}")
        self._module(f.module)  # current-context check
        return f

    def _launch(self, f: Function, grid: Any, block: Any, shared: int, hstream: Any,
                params: bytes, cooperative: bool = False) -> int:
        s = self._stream(hstream)
        if shared < 0:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"shared {shared}")
        module_id = f.module.table.module_id
        with s.ctx.lock:
            fence = int(s.ctx.backend.gmodule_launch(s.ctx.handle, module_id, f.index, grid,
                                                     block, shared, params, s.sid,
                                                     cooperative))
            s.record(fence)
            s.ctx.printf_pending |= f.info.prints
        return fence

    @api
    def cuFuncGetAttribute(self, attrib: int, f: Function) -> int:
        """The value of a CUfunction_attribute of ``f``."""
        return self._function(f).attribute(int(attrib))

    @api
    def cuLaunchKernel(self, f: Function, gridDimX: int, gridDimY: int, gridDimZ: int,
                       blockDimX: int, blockDimY: int, blockDimZ: int,
                       sharedMemBytes: int, hStream: Any,
                       kernelParams: Sequence[Any] | None = (),
                       extra: bytes | None = None) -> None:
        """Launch ``f`` on a grid of blocks in ``hStream``; returns once queued.

        ``kernelParams`` are packed by the kernel's declared parameter layout; instead,
        ``extra`` may give the packed buffer itself (CUDA's CU_LAUNCH_PARAM_BUFFER_POINTER),
        at least as long as the parameters reach.  Giving both is INVALID_VALUE.
        """
        f = self._function(f)
        if extra is not None:
            if kernelParams:
                raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, "kernelParams and extra")
            params = _extra_buffer(f, extra)
        else:
            params = pack_params(f.info, kernelParams or ())
        self._launch(f, _dims(gridDimX, gridDimY, gridDimZ),
                     _dims(blockDimX, blockDimY, blockDimZ), sharedMemBytes, hStream, params)

    @api
    def cuLaunchCooperativeKernel(self, f: Function, gridDimX: int, gridDimY: int,
                                  gridDimZ: int, blockDimX: int, blockDimY: int,
                                  blockDimZ: int, sharedMemBytes: int, hStream: Any,
                                  kernelParams: Sequence[Any] | None = ()) -> None:
        """Launch ``f`` with every block resident at once, so that its blocks may wait for
        each other (``this_grid().sync()``); returns once queued.  A grid larger than
        :meth:`cuOccupancyMaxActiveBlocksPerMultiprocessor` times the multiprocessor count
        is CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE."""
        f = self._function(f)
        self._launch(f, _dims(gridDimX, gridDimY, gridDimZ),
                     _dims(blockDimX, blockDimY, blockDimZ), sharedMemBytes, hStream,
                     pack_params(f.info, kernelParams or ()), cooperative=True)

    @api
    def cuOccupancyMaxActiveBlocksPerMultiprocessor(self, func: Function, blockSize: int,
                                                    dynamicSMemSize: int) -> int:
        """How many blocks of ``blockSize`` threads of ``func`` one multiprocessor holds at
        once (``libgdev.kernel.coresident_blocks_per_mp``; 0 if the block is too large)."""
        info = self._function(func).info
        if blockSize <= 0 or dynamicSMemSize < 0:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"block size {blockSize}, dynamic "
                       f"shared memory {dynamicSMemSize}")
        return coresident_blocks_per_mp(blockSize, info.static_shared + dynamicSMemSize,
                                        info.max_threads)

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
