"""The lower file's format: a header extent, then one record per 4 KiB plaintext extent.

::

    offset 0     header (HEADER_SIZE bytes): magic "GECF", version, file id (16 random bytes),
                 plaintext size (u64), the wrapped file key, HMAC-SHA256 of all of these
    offset 4096  record 0: ciphertext of extent 0 (4096 bytes) || tag (32 bytes)
                 record 1: ...

Extent ``i`` is AES-256-XTS encrypted with tweak ``i`` (the data unit number, little-endian)
and its tag is HMAC-SHA256(mac key, file id || i || ciphertext): a flipped bit, a record
moved to another place or file, or a torn record is an ``EIO``.  A record always holds a
whole extent; plaintext past the size is zero (truncate keeps that true).  A lower file
shorter than the size in its header needs is an ``EIO`` too (truncated behind our back).
The header's own HMAC covers the size, so a rolled-back or edited size is detected as well.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import os
import struct
from dataclasses import dataclass

from gdevd.errors import GdevError

from .keys import WRAPPED_KEY_SIZE, FileKey, MountKey

EXTENT = 4096
TAG = 32
RECORD = EXTENT + TAG
HEADER_SIZE = 4096
MAGIC = b"GECF"
VERSION = 1
_HEAD_FMT = f"<4sI16sQ{WRAPPED_KEY_SIZE}s"
_HEAD_LEN = struct.calcsize(_HEAD_FMT)


@dataclass
class Header:
    """A file's header: its id, plaintext size and key."""

    file_id: bytes
    size: int
    key: FileKey

    @classmethod
    def new(cls) -> Header:
        """The header of a new, empty file."""
        return cls(os.urandom(16), 0, FileKey.generate())

    def pack(self, mk: MountKey) -> bytes:
        """The HEADER_SIZE bytes stored at offset 0."""
        body = struct.pack(_HEAD_FMT, MAGIC, VERSION, self.file_id, self.size, mk.wrap(self.key))
        tag = hmac.new(self.key.mac, body, hashlib.sha256).digest()
        return (body + tag).ljust(HEADER_SIZE, b"\0")

    @classmethod
    def unpack(cls, data: bytes, mk: MountKey) -> Header:
        """Parse and authenticate a header; GdevError(EIO) if it is not intact."""
        if len(data) < _HEAD_LEN + TAG:
            raise GdevError(errno.EIO, "short ecryptfs header")
        magic, version, file_id, size, wrapped = struct.unpack_from(_HEAD_FMT, data)
        if magic != MAGIC or version != VERSION:
            raise GdevError(errno.EIO, "not an ecryptfs file")
        key = mk.unwrap(wrapped)
        tag = hmac.new(key.mac, data[:_HEAD_LEN], hashlib.sha256).digest()
        if not hmac.compare_digest(tag, data[_HEAD_LEN:_HEAD_LEN + TAG]):
            raise GdevError(errno.EIO, "ecryptfs header authentication failed")
        return cls(file_id, size, key)


def extents_for(size: int) -> int:
    """How many extents hold ``size`` plaintext bytes."""
    return -(-size // EXTENT)


def record_offset(index: int) -> int:
    """Where extent ``index``'s record starts in the lower file."""
    return HEADER_SIZE + index * RECORD


def lower_size(size: int) -> int:
    """The lower file's size for ``size`` plaintext bytes."""
    return HEADER_SIZE + extents_for(size) * RECORD


def tag(header: Header, index: int, ciphertext: bytes | memoryview) -> bytes:
    """The tag of extent ``index`` with ``ciphertext``."""
    mac = hmac.new(header.key.mac, header.file_id, hashlib.sha256)
    mac.update(index.to_bytes(8, "little"))
    mac.update(ciphertext)
    return mac.digest()


def seal(header: Header, first: int, ciphertext: bytes) -> bytes:
    """Records for consecutive extents from ``first``: each extent's ciphertext and tag."""
    out = bytearray()
    for i in range(len(ciphertext) // EXTENT):
        ct = ciphertext[i * EXTENT:(i + 1) * EXTENT]
        out += ct
        out += tag(header, first + i, ct)
    return bytes(out)


def open_records(header: Header, first: int, records: bytes, count: int) -> bytes:
    """The ciphertext of ``count`` records read from extent ``first``; EIO if any record is
    missing (the lower file is short) or fails its tag."""
    if len(records) != count * RECORD:
        raise GdevError(errno.EIO, f"extents {first}..{first + count - 1}: lower file truncated")
    view = memoryview(records)
    out = bytearray()
    for i in range(count):
        rec = view[i * RECORD:(i + 1) * RECORD]
        ct = rec[:EXTENT]
        if not hmac.compare_digest(tag(header, first + i, ct), bytes(rec[EXTENT:])):
            raise GdevError(errno.EIO, f"extent {first + i}: authentication failed")
        out += ct
    return bytes(out)
