"""Argument checks and the one error translation between the C core and Python.

C functions return 0 or ``-errno``; vector functions return -1, the index of the first
faulting element, or ``-1 - errno``.  Everything here turns those into
:class:`~gdevd.errors.GdevError` / :class:`~gdevd.errors.MmuFault` exactly once.
"""

from __future__ import annotations

import errno
from typing import Any

import numpy as np

from gdevd.errors import GdevError, MmuFault
from gdevd.gpu._core import ffi

U64_MAX = (1 << 64) - 1
_REASON = {-errno.EFAULT: "unmapped", -errno.EACCES: "protection"}


def check(ret: int, what: str) -> int:
    """Return ``ret`` if it is >= 0, else raise GdevError(-ret) naming ``what``."""
    if ret < 0:
        raise GdevError(-ret, what)
    return ret


def check_fault(ret: int, va: int, what: str, index: int = 0) -> None:
    """Like :func:`check`, but -EFAULT/-EACCES become MmuFault at ``va``."""
    if ret in _REASON:
        raise MmuFault(va, _REASON[ret], index)
    check(ret, what)


def as_int(value: Any, name: str, lo: int = 0, hi: int = U64_MAX) -> int:
    """``value`` as an int in [lo, hi]; bools, floats and out-of-range values -> EINVAL."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise GdevError(errno.EINVAL, f"{name} must be an integer, not {type(value).__name__}")
    value = int(value)
    if not lo <= value <= hi:
        raise GdevError(errno.EINVAL, f"{name}={value} outside [{lo}, {hi}]")
    return value


def as_u64_vector(vas: Any, name: str = "vas") -> np.ndarray:
    """A 1-D C-contiguous uint64 array (no copy when it already is one); else EINVAL."""
    if not isinstance(vas, np.ndarray) or vas.dtype != np.uint64 or vas.ndim != 1:
        raise GdevError(errno.EINVAL, f"{name} must be a 1-D np.uint64 array")
    return np.ascontiguousarray(vas)


def as_typed(values: Any, dtype: np.dtype, n: int, name: str) -> np.ndarray:
    """``values`` (a scalar or n elements) as a contiguous array of n ``dtype``; else EINVAL."""
    try:
        arr = np.asarray(values, dtype=dtype)
        return np.ascontiguousarray(np.broadcast_to(arr, (n,)))
    except (TypeError, ValueError, OverflowError) as exc:
        raise GdevError(errno.EINVAL, f"{name}: {exc}") from None


def readable(buf: Any, name: str) -> tuple[Any, int]:
    """(cffi pointer, nbytes) over any C-contiguous buffer, without copying; else EINVAL."""
    try:
        size = memoryview(buf).nbytes
        return ffi.from_buffer("uint8_t[]", buf), size
    except (TypeError, ValueError, BufferError) as exc:
        raise GdevError(errno.EINVAL, f"{name}: {exc}") from None


def writable(buf: Any, name: str) -> tuple[Any, int]:
    """(cffi pointer, nbytes) over a writable C-contiguous buffer, without copying."""
    try:
        size = memoryview(buf).nbytes
        return ffi.from_buffer("uint8_t[]", buf, require_writable=True), size
    except (TypeError, ValueError, BufferError) as exc:
        raise GdevError(errno.EINVAL, f"{name}: {exc}") from None
