"""CUresult codes, the CudaError exception, and the one errno -> CUresult translation.

Every public entry point of the CUDA layer is wrapped by :func:`api`, the single place where
an exception of the layer below (``libgdev.errors.GdevError``, the one root of the runtime in
process and of the client, an ``OSError`` carrying the daemon's reason) becomes a
:class:`CudaError` whose message keeps that reason.  :func:`result_from_errno` is the table.
Nothing returns a status code: failure is always an exception, success a value.
"""

from __future__ import annotations

import enum
import errno as E
import functools
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


class CUresult(enum.IntEnum):
    """CUDA driver API status codes, with CUDA's numeric values."""

    CUDA_SUCCESS = 0
    CUDA_ERROR_INVALID_VALUE = 1
    CUDA_ERROR_OUT_OF_MEMORY = 2
    CUDA_ERROR_NOT_INITIALIZED = 3
    CUDA_ERROR_DEINITIALIZED = 4
    CUDA_ERROR_DEVICE_UNAVAILABLE = 46
    CUDA_ERROR_NO_DEVICE = 100
    CUDA_ERROR_INVALID_DEVICE = 101
    CUDA_ERROR_INVALID_IMAGE = 200
    CUDA_ERROR_INVALID_CONTEXT = 201
    CUDA_ERROR_CONTEXT_ALREADY_CURRENT = 202
    CUDA_ERROR_MAP_FAILED = 205
    CUDA_ERROR_UNMAP_FAILED = 206
    CUDA_ERROR_NO_BINARY_FOR_GPU = 209
    CUDA_ERROR_INVALID_PTX = 218
    CUDA_ERROR_INVALID_SOURCE = 300
    CUDA_ERROR_FILE_NOT_FOUND = 301
    CUDA_ERROR_OPERATING_SYSTEM = 304
    CUDA_ERROR_INVALID_HANDLE = 400
    CUDA_ERROR_ILLEGAL_STATE = 401
    CUDA_ERROR_NOT_FOUND = 500
    CUDA_ERROR_NOT_READY = 600
    CUDA_ERROR_ILLEGAL_ADDRESS = 700
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701
    CUDA_ERROR_LAUNCH_TIMEOUT = 702
    CUDA_ERROR_CONTEXT_IS_DESTROYED = 709
    CUDA_ERROR_ASSERT = 710
    CUDA_ERROR_LAUNCH_FAILED = 719
    CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE = 720
    CUDA_ERROR_NOT_PERMITTED = 800
    CUDA_ERROR_NOT_SUPPORTED = 801
    CUDA_ERROR_TIMEOUT = 909
    CUDA_ERROR_UNKNOWN = 999


# What NVIDIA's driver answers to cuGetErrorName / cuGetErrorString (the name is the member's).
ERROR_STRINGS: dict[CUresult, str] = {
    CUresult.CUDA_SUCCESS: "no error",
    CUresult.CUDA_ERROR_INVALID_VALUE: "invalid argument",
    CUresult.CUDA_ERROR_OUT_OF_MEMORY: "out of memory",
    CUresult.CUDA_ERROR_NOT_INITIALIZED: "initialization error",
    CUresult.CUDA_ERROR_DEINITIALIZED: "driver shutting down",
    CUresult.CUDA_ERROR_DEVICE_UNAVAILABLE: "CUDA-capable device(s) is/are busy or unavailable",
    CUresult.CUDA_ERROR_NO_DEVICE: "no CUDA-capable device is detected",
    CUresult.CUDA_ERROR_INVALID_DEVICE: "invalid device ordinal",
    CUresult.CUDA_ERROR_INVALID_IMAGE: "device kernel image is invalid",
    CUresult.CUDA_ERROR_INVALID_CONTEXT: "invalid device context",
    CUresult.CUDA_ERROR_CONTEXT_ALREADY_CURRENT: "context already current",
    CUresult.CUDA_ERROR_MAP_FAILED: "mapping of buffer object failed",
    CUresult.CUDA_ERROR_UNMAP_FAILED: "unmapping of buffer object failed",
    CUresult.CUDA_ERROR_NO_BINARY_FOR_GPU:
        "no kernel image is available for execution on the device",
    CUresult.CUDA_ERROR_INVALID_PTX: "a PTX JIT compilation failed",
    CUresult.CUDA_ERROR_INVALID_SOURCE: "device kernel image is invalid",
    CUresult.CUDA_ERROR_FILE_NOT_FOUND: "file not found",
    CUresult.CUDA_ERROR_OPERATING_SYSTEM: "OS call failed or operation not supported on this OS",
    CUresult.CUDA_ERROR_INVALID_HANDLE: "invalid resource handle",
    CUresult.CUDA_ERROR_ILLEGAL_STATE: "the operation cannot be performed in the present state",
    CUresult.CUDA_ERROR_NOT_FOUND: "named symbol not found",
    CUresult.CUDA_ERROR_NOT_READY: "device not ready",
    CUresult.CUDA_ERROR_ILLEGAL_ADDRESS: "an illegal memory access was encountered",
    CUresult.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: "too many resources requested for launch",
    CUresult.CUDA_ERROR_LAUNCH_TIMEOUT: "the launch timed out and was terminated",
    CUresult.CUDA_ERROR_CONTEXT_IS_DESTROYED: "context is destroyed",
    CUresult.CUDA_ERROR_ASSERT: "device-side assert triggered",
    CUresult.CUDA_ERROR_LAUNCH_FAILED: "unspecified launch failure",
    CUresult.CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE:
        "too many blocks in cooperative launch",
    CUresult.CUDA_ERROR_NOT_PERMITTED: "operation not permitted",
    CUresult.CUDA_ERROR_NOT_SUPPORTED: "operation not supported",
    CUresult.CUDA_ERROR_TIMEOUT: "wait operation timed out",
    CUresult.CUDA_ERROR_UNKNOWN: "unknown error",
}


class CudaError(Exception):
    """A failed CUDA driver API call.  ``.result`` is the :class:`CUresult`."""

    def __init__(self, result: CUresult, detail: str = "") -> None:
        self.result = CUresult(result)
        self.detail = detail
        super().__init__(self.result, detail)

    @property
    def name(self) -> str:
        """CUDA's name of the result, e.g. ``"CUDA_ERROR_OUT_OF_MEMORY"``."""
        return self.result.name

    def __str__(self) -> str:
        return f"{self.name} ({int(self.result)}): {self.detail}" if self.detail else self.name


_ERRNO_TO_RESULT: dict[int, CUresult] = {
    E.ENOMEM: CUresult.CUDA_ERROR_OUT_OF_MEMORY,
    E.ENOSPC: CUresult.CUDA_ERROR_OUT_OF_MEMORY,
    E.EINVAL: CUresult.CUDA_ERROR_INVALID_VALUE,
    E.ERANGE: CUresult.CUDA_ERROR_INVALID_VALUE,
    E.E2BIG: CUresult.CUDA_ERROR_INVALID_VALUE,
    E.EEXIST: CUresult.CUDA_ERROR_INVALID_VALUE,
    E.ENOENT: CUresult.CUDA_ERROR_INVALID_VALUE,  # unknown address / object
    E.EBADF: CUresult.CUDA_ERROR_INVALID_CONTEXT,  # closed or foreign handle
    E.ENODEV: CUresult.CUDA_ERROR_INVALID_DEVICE,
    E.ENXIO: CUresult.CUDA_ERROR_INVALID_DEVICE,
    E.EFAULT: CUresult.CUDA_ERROR_ILLEGAL_ADDRESS,  # kernel (or copy) touched unmapped memory
    E.EIO: CUresult.CUDA_ERROR_LAUNCH_FAILED,  # trap, or a context already faulted
    E.ENOTRECOVERABLE: CUresult.CUDA_ERROR_ASSERT,  # a device assert failed (sticky)
    E.ETIME: CUresult.CUDA_ERROR_LAUNCH_TIMEOUT,  # watchdog; gsync polls are handled apart
    E.ETIMEDOUT: CUresult.CUDA_ERROR_TIMEOUT,
    E.EOVERFLOW: CUresult.CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,  # more than fit at once
    E.EAGAIN: CUresult.CUDA_ERROR_NOT_READY,  # every fence id of the context in flight
    E.EBUSY: CUresult.CUDA_ERROR_DEVICE_UNAVAILABLE,  # the GPU has its maximum of contexts
    E.EACCES: CUresult.CUDA_ERROR_NOT_PERMITTED,
    E.EPERM: CUresult.CUDA_ERROR_NOT_PERMITTED,
    E.ENOSYS: CUresult.CUDA_ERROR_NOT_SUPPORTED,
    E.EOPNOTSUPP: CUresult.CUDA_ERROR_NOT_SUPPORTED,
    E.EPIPE: CUresult.CUDA_ERROR_OPERATING_SYSTEM,  # daemon connection lost
    E.ECONNRESET: CUresult.CUDA_ERROR_OPERATING_SYSTEM,
    E.ENOTCONN: CUresult.CUDA_ERROR_OPERATING_SYSTEM,
}


def result_from_errno(err: int | None) -> CUresult:
    """Map an errno of the Gdev layer below to a CUresult (unknown values: CUDA_ERROR_UNKNOWN)."""
    if err is None:
        return CUresult.CUDA_ERROR_UNKNOWN
    return _ERRNO_TO_RESULT.get(err, CUresult.CUDA_ERROR_UNKNOWN)


# Module loads: the loader's EINVAL is PTX it rejects, ENOEXEC an image that is not PTX.
LOAD_REMAP: dict[int, CUresult] = {E.EINVAL: CUresult.CUDA_ERROR_INVALID_PTX,
                                   E.ENOEXEC: CUresult.CUDA_ERROR_INVALID_IMAGE}

# Copies: an EFAULT there is a range running past its allocation (the runtime's lookup), a bad
# argument, not a kernel's sticky illegal address.
COPY_REMAP: dict[int, CUresult] = {E.EFAULT: CUresult.CUDA_ERROR_INVALID_VALUE}


def translate(exc: BaseException, remap: dict[int, CUresult] | None = None) -> CudaError:
    """Turn an exception of the layer below into a CudaError; the one translation point.

    Anything carrying an ``errno`` (GdevError, OSError and subclasses) goes through
    :func:`result_from_errno`, unless the entry point's ``remap`` (:data:`COPY_REMAP`,
    :data:`LOAD_REMAP`) names that errno.  The message keeps the layer below's text.
    """
    if isinstance(exc, CudaError):
        return exc
    err = getattr(exc, "errno", None)
    if remap and err in remap:
        return CudaError(remap[err], str(exc))
    return CudaError(result_from_errno(err), str(exc))


def _wrap(fn: Callable[P, R], remap: dict[int, CUresult] | None) -> Callable[P, R]:
    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except CudaError:
            raise
        except OSError as exc:
            raise translate(exc, remap) from exc

    wrapper.__cuda_api__ = True  # type: ignore[attr-defined]
    return wrapper


def api(fn: Callable[P, R]) -> Callable[P, R]:
    """Decorate a public CUDA entry point: exceptions with an errno become CudaError."""
    return _wrap(fn, None)


def copy_api(fn: Callable[P, R]) -> Callable[P, R]:
    """:func:`api` for memcpy/memset entry points (:data:`COPY_REMAP`), methods of the
    driver: a copy that fails in a faulted context fails with that context's sticky error
    (the daemon refuses its copies, as CUDA does every call after a kernel's fault), which
    ``gsync`` of fence 0 tells at once from a bad range's EFAULT."""
    wrapped = _wrap(fn, COPY_REMAP)

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return wrapped(*args, **kwargs)
        except CudaError as exc:
            if exc.result == CUresult.CUDA_ERROR_INVALID_VALUE:
                check_sticky(args[0])
            raise

    wrapper.__cuda_api__ = True  # type: ignore[attr-defined]
    return wrapper


def check_sticky(driver: Any) -> None:
    """Raise the current context's sticky fault, if a kernel of it faulted (the daemon's
    answer to ``gsync`` of fence 0); return otherwise, also when there is no current
    context.  What :func:`copy_api` and the calls the daemon never sees (event creation)
    check, as every call of a faulted CUDA context fails."""
    try:
        ctx = driver._current()
    except CudaError:
        return
    try:
        ctx.backend.gsync(ctx.handle, 0)
    except OSError as exc:
        err = translate(exc)
        if err.result in _KERNEL_FAULTS:    # the daemon's check_kernel_fault
            raise err from exc


_KERNEL_FAULTS = {CUresult.CUDA_ERROR_ILLEGAL_ADDRESS, CUresult.CUDA_ERROR_LAUNCH_FAILED,
                  CUresult.CUDA_ERROR_ASSERT, CUresult.CUDA_ERROR_LAUNCH_TIMEOUT}


def module_api(fn: Callable[P, R]) -> Callable[P, R]:
    """:func:`api` for cuModuleLoad* (:data:`LOAD_REMAP`)."""
    return _wrap(fn, LOAD_REMAP)


def fail(result: CUresult, detail: str = "") -> CudaError:
    """Build a CudaError for a check made by the CUDA layer itself (``raise fail(...)``)."""
    return CudaError(result, detail)


class ErrorAPI:
    """cuGetErrorName / cuGetErrorString: NVIDIA's name and text of a CUresult (they need no
    cuInit, as in CUDA)."""

    @api
    def cuGetErrorName(self, error: int) -> str:
        """CUDA's name of ``error`` (``"CUDA_ERROR_OUT_OF_MEMORY"``); CUDA_ERROR_INVALID_VALUE
        for a value that is not a CUresult this layer knows."""
        return _known(error).name

    @api
    def cuGetErrorString(self, error: int) -> str:
        """NVIDIA's description of ``error`` (``"out of memory"``); CUDA_ERROR_INVALID_VALUE
        for a value that is not a CUresult this layer knows."""
        return ERROR_STRINGS[_known(error)]


def _known(error: int) -> CUresult:
    if isinstance(error, bool) or not isinstance(error, int) or \
            error not in CUresult._value2member_map_:
        raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"not a CUresult: {error!r}")
    return CUresult(error)
