"""The 64 bytes of a CUDA IPC handle (``CUipcMemHandle``, ``CUipcEventHandle``) as gdevd
writes them: part of the protocol surface, imported by the daemon and the clients, no I/O.

A handle travels between processes as plain bytes (a pipe, a file, a socket), so it is its
own credential: the daemon's record id and a 128-bit secret drawn from ``secrets`` (the
CSPRNG) that the daemon compares in constant time.  Layout, little-endian::

    magic 8s | id u32 | pid u32 | size u64 | secret 16s | reserved 24 bytes (zero)

``magic`` says what the handle names (:data:`MEM_MAGIC` an exported allocation,
:data:`EVENT_MAGIC` an interprocess event); ``id`` is the daemon's record (a segment of the
shm table, an event of the IPC event table); ``pid`` is the exporting process and ``size``
the allocation's size (0 for an event): both are information for the CUDA layers (CUDA
refuses to open a handle in the process that exported it), never trusted by the daemon.
``libgdev/csrc/cuda/ipc.c`` reads the same layout.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

HANDLE_SIZE = 64                        # CU_IPC_HANDLE_SIZE
MEM_MAGIC = b"GDEVIPCM"
EVENT_MAGIC = b"GDEVIPCE"
SECRET_SIZE = 16
_LAYOUT = struct.Struct("<8sIIQ16s24s")
assert _LAYOUT.size == HANDLE_SIZE


class IpcHandle(NamedTuple):
    """The fields of a handle (see the module docstring)."""

    magic: bytes
    id: int
    pid: int
    size: int
    secret: bytes


def pack(h: IpcHandle) -> bytes:
    """The 64 bytes of ``h``."""
    return _LAYOUT.pack(h.magic, h.id, h.pid, h.size, h.secret, bytes(24))


def unpack(data: object, magic: bytes) -> IpcHandle | None:
    """The handle in ``data`` if it is 64 bytes with ``magic`` and a zero reserved part,
    else None (not a handle of this kind)."""
    if not isinstance(data, (bytes, bytearray, memoryview)) or len(data) != HANDLE_SIZE:
        return None
    m, hid, pid, size, secret, reserved = _LAYOUT.unpack(bytes(data))  # 64 bytes
    if m != magic or any(reserved):
        return None
    return IpcHandle(m, hid, pid, size, secret)
