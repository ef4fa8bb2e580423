"""The one check of a host buffer, shared by the client and the daemon.

A copy's host side may be anything that exports the buffer protocol (bytes, bytearray,
memoryview, numpy arrays, mmaps).  :func:`byte_view` is the single place that decides
whether such an object is usable: C-contiguous, and writable when the copy writes into it.
Each caller translates :class:`BufferProblem` into its own boundary's error (libgdev's
``GdevError``, the CUDA layer's ``CUDA_ERROR_INVALID_VALUE``, the runtime's ``GdevError``),
keeping the reason.
"""

from __future__ import annotations

from typing import Any


class BufferProblem(ValueError):
    """Why a host object cannot serve as a copy's host buffer (the message says)."""


def byte_view(buf: Any, *, writable: bool) -> memoryview:
    """A flat, one-dimensional byte view of ``buf`` (no copy).

    Raises :class:`BufferProblem` when ``buf`` exports no buffer, is not C-contiguous, or is
    read-only while ``writable`` is asked.
    """
    try:
        view = memoryview(buf)
    except TypeError:
        raise BufferProblem(f"not a host buffer: {type(buf).__name__}") from None
    if not view.c_contiguous:
        raise BufferProblem("host buffer is not C-contiguous")
    if writable and view.readonly:
        raise BufferProblem("host buffer is read-only")
    return view.cast("B") if view.format != "B" or view.ndim != 1 else view
