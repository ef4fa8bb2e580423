"""The linked-module image: several PTX translation units in one module image (protocol
surface).

A MODULE_LOAD image is either PTX text or this container, which the daemon links into one
module (``gdevd/gpu/ptx/unitlink.py``, as ``nvlink`` links relocatable device code).  libcuda's
``cuLinkComplete`` hands one back to the program and libcudart builds one for a program
compiled with ``nvcc -rdc=true``; ``cuModuleLoadData`` and ``cuLibraryLoadData`` take it as
they take PTX.  Like every CUDA image it gives its own size, since ``cuModuleLoadData``
takes none.  Fixed-width little-endian, each record padded to a multiple of 8::

    HEADER: magic "GDEVLNK1" 8s, n_inputs u32, reserved u32 (zero), total_size u64  (24 bytes)
    n_inputs x ( INPUT: name_len u32, reserved u32 (zero), text_len u64  (16 bytes)
                 name (name_len bytes, UTF-8), then the PTX text (text_len bytes, no NUL),
                 together zero-padded to 8 )

``total_size`` counts every byte from the magic to the last input's padding.  Bounds:
at most :data:`MAX_INPUTS` inputs, names of at most :data:`NAME_MAX` bytes.  No I/O;
:func:`decode` raises ``ProtocolError(EINVAL)`` naming what is malformed.
"""

from __future__ import annotations

import errno as _errno
import struct
from collections.abc import Sequence

from libgdev.wire import ProtocolError

MAGIC = b"GDEVLNK1"
HEADER = struct.Struct("<8sIIQ")
INPUT = struct.Struct("<IIQ")
MAX_INPUTS = 256
NAME_MAX = 1024


def _pad8(n: int) -> int:
    return (n + 7) & ~7


def is_linked(image: bytes | bytearray | memoryview) -> bool:
    """Whether ``image`` starts like a linked-module image (its contents unchecked)."""
    return bytes(image[:len(MAGIC)]) == MAGIC


def encode(units: Sequence[tuple[str, str]]) -> bytes:
    """The image of ``units`` (``(name, PTX text)`` pairs in link order); ValueError beyond
    the bounds or for a text with a NUL."""
    if not 0 < len(units) <= MAX_INPUTS:
        raise ValueError(f"{len(units)} inputs (1 to {MAX_INPUTS})")
    body = bytearray()
    for name, text in units:
        n, t = name.encode("utf-8"), text.encode("utf-8")
        if len(n) > NAME_MAX or b"\0" in t:
            raise ValueError(f"input {name[:64]!r}: name too long or NUL in its text")
        rec = INPUT.pack(len(n), 0, len(t)) + n + t
        body += rec + bytes(_pad8(len(rec)) - len(rec))
    return HEADER.pack(MAGIC, len(units), 0, HEADER.size + len(body)) + bytes(body)


def _bad(why: str) -> ProtocolError:
    return ProtocolError(_errno.EINVAL, f"linked module image: {why}")


def decode(image: bytes | bytearray | memoryview) -> list[tuple[str, str]]:
    """The ``(name, PTX text)`` inputs of a linked-module image; ``ProtocolError(EINVAL)``
    for a short, oversized, out-of-bounds or non-UTF-8 image, nonzero reserved fields or
    bytes after ``total_size``."""
    raw = memoryview(image).cast("B")
    if len(raw) < HEADER.size:
        raise _bad(f"{len(raw)} bytes")
    magic, n, reserved, total = HEADER.unpack_from(raw)
    if magic != MAGIC or reserved:
        raise _bad("bad magic or reserved field")
    if not 0 < n <= MAX_INPUTS:
        raise _bad(f"{n} inputs (1 to {MAX_INPUTS})")
    if total != len(raw):
        raise _bad(f"total_size {total} but {len(raw)} bytes")
    out, at = [], HEADER.size
    for k in range(n):
        if at + INPUT.size > total:
            raise _bad(f"input {k} past the end")
        name_len, reserved, text_len = INPUT.unpack_from(raw, at)
        end = at + INPUT.size + name_len + text_len
        if reserved or name_len > NAME_MAX or end > total:
            raise _bad(f"input {k}: bad lengths or reserved field")
        try:
            name = bytes(raw[at + INPUT.size:at + INPUT.size + name_len]).decode("utf-8")
            text = bytes(raw[end - text_len:end]).decode("utf-8")
        except UnicodeDecodeError:
            raise _bad(f"input {k} is not UTF-8") from None
        out.append((name or f"input{k}", text))
        at = at + _pad8(end - at)
    if at != total:
        raise _bad(f"{total - at} bytes after the last input")
    return out
