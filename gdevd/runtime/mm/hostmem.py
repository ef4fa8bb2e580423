"""The host side of a copy, described once: its bytes and whether they are pinned.

Theory of operation
-------------------
A copy verb's host memory is a :class:`HostRange`: ``array``, an np.uint8 view of exactly
the copy's bytes, and ``pinned``, the context's pinned mapping those bytes lie in (None for
pageable memory).  It is built once, where the fact is known, and the copy paths read it:

* the ioctl boundary knows what the client sent: an inline payload (:func:`inline`, a view
  of the message, no copy) or (buffer, offset, size) in a pinned or staging buffer
  (:func:`in_pinned`);
* an in-process caller (``kcuda``, ``gdevd.gdev``) passes any buffer; :func:`describe`
  validates it and recognises pinned memory by what owns its bytes (a
  :class:`~.memory.DmaBuffer`, or a view of a pinned block's array), never by searching
  addresses.

Every range a client names is checked here and nowhere else (:func:`check_range`): integer
offset and size, ``0 <= offset``, ``offset + size`` within the buffer; a client's numbers
are never trusted further than that.
"""

from __future__ import annotations

import errno
from typing import Any

import numpy as np

from libgdev.buffers import BufferProblem, byte_view

from ...errors import GdevError
from .memory import DmaBlock, DmaBuffer, MemObject, ObjectMap

_OWNER_DEPTH = 8        # views of views: how far to follow .base / .obj to the owner


class HostRange:
    """``array`` (the copy's bytes, np.uint8) and ``pinned`` (its pinned mapping, or None)."""

    __slots__ = ("array", "pinned")

    def __init__(self, array: np.ndarray, pinned: MemObject | None) -> None:
        self.array, self.pinned = array, pinned

    @property
    def size(self) -> int:
        """The length in bytes."""
        return int(self.array.size)

    def __repr__(self) -> str:
        where = "pageable" if self.pinned is None else f"in {self.pinned}"
        return f"<HostRange {self.size} bytes {where}>"


def check_range(offset: object, size: object, limit: int, what: str) -> tuple[int, int]:
    """``(offset, size)`` if ``[offset, offset + size)`` lies inside ``limit`` bytes of
    ``what``: EINVAL for a non-integer or negative value, EFAULT past the end."""
    for name, v in (("offset", offset), ("size", size)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise GdevError(errno.EINVAL, f"{what}: {name} must be a non-negative integer")
    assert isinstance(offset, int) and isinstance(size, int)
    if offset + size > limit:
        raise GdevError(errno.EFAULT, f"{what}: [{offset}, +{size}) outside {limit} bytes")
    return offset, size


def inline(payload: Any) -> HostRange:
    """An inline payload (bytes-like, e.g. a memoryview of the request) as a pageable
    range, without copying it."""
    return HostRange(np.frombuffer(payload, dtype=np.uint8), None)


def scratch(size: int) -> HostRange:
    """Fresh pageable bytes for a copy's result (an inline reply)."""
    return HostRange(np.empty(size, dtype=np.uint8), None)


def in_pinned(buf: DmaBuffer, offset: object, size: object, what: str) -> HostRange:
    """Bytes ``[offset, offset + size)`` of pinned buffer ``buf`` (checked: see
    :func:`check_range`)."""
    lo, n = check_range(offset, size, buf.size, what)
    return HostRange(buf.array[lo:lo + n], buf.mapping)


def as_bytes(buf: Any, size: int, *, writable: bool) -> np.ndarray:
    """The first ``size`` bytes of host buffer ``buf`` as a flat np.uint8 view (no copy).

    ``GdevError(EINVAL)`` if it is not a C-contiguous buffer, is too short, or is read-only
    while ``writable`` is asked.
    """
    if isinstance(buf, DmaBuffer):
        buf = buf.array
    try:
        view = byte_view(buf, writable=writable)
    except BufferProblem as e:
        raise GdevError(errno.EINVAL, str(e)) from None
    if view.nbytes < size:
        raise GdevError(errno.EINVAL, f"host buffer holds {view.nbytes} bytes, copy needs {size}")
    if isinstance(buf, np.ndarray) and buf.dtype == np.uint8 and buf.ndim == 1:
        return buf[:size]
    return np.frombuffer(view, dtype=np.uint8)[:size]


def pinned_holding(objects: ObjectMap, buf: Any) -> MemObject | None:
    """The pinned mapping of ``objects`` whose bytes ``buf`` is (a view of), or None.

    Follows the view's owners (``ndarray.base``, ``memoryview.obj``) to a pinned block's
    array: what the bytes are, not where they are.  A :class:`DmaBuffer` names its mapping,
    which must be one of ``objects`` (another context's buffer is not pinned here).
    """
    if isinstance(buf, DmaBuffer):
        obj = buf.mapping
        return obj if objects.find(obj.va) is obj else None
    owner = buf
    for _ in range(_OWNER_DEPTH):
        if owner is None or not objects.pinned:
            return None
        found = objects.pinned_owning(owner)
        if found is not None:
            return found if _inside(found, buf) else None
        owner = owner.base if isinstance(owner, np.ndarray) else \
            owner.obj if isinstance(owner, memoryview) else None
    return None


def _inside(obj: MemObject, buf: Any) -> bool:
    """Whether view ``buf`` of ``obj``'s bytes lies inside them (a strided view may not)."""
    block = obj.block
    arr = np.asarray(buf)
    return isinstance(block, DmaBlock) and block.contains(arr.ctypes.data, max(arr.nbytes, 1))


def describe(objects: ObjectMap, buf: Any, size: int, *, writable: bool) -> HostRange:
    """The :class:`HostRange` of the first ``size`` bytes of any host buffer ``buf`` (a
    HostRange is checked against ``size`` and this context's mappings and returned)."""
    if isinstance(buf, HostRange):
        if buf.size != size:
            raise GdevError(errno.EINVAL, f"host range of {buf.size} bytes, copy needs {size}")
        if buf.pinned is not None and objects.find(buf.pinned.va) is not buf.pinned:
            raise GdevError(errno.ENOENT, f"{buf.pinned} is not mapped in this context")
        if writable and not buf.array.flags.writeable:
            raise GdevError(errno.EINVAL, "host buffer is read-only")
        return buf
    array = as_bytes(buf, size, writable=writable)
    return HostRange(array, pinned_holding(objects, buf))


def offset_in(obj: MemObject, array: np.ndarray) -> int:
    """Where ``array`` (a view of pinned ``obj``'s bytes) starts in it, in bytes."""
    block = obj.block
    assert isinstance(block, DmaBlock)
    return int(array.ctypes.data - block.address)
