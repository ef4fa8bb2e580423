"""One encrypted file: reads and writes at any offset and size over the extent format.

An :class:`EncryptedFile` owns a descriptor of the lower file, its authenticated header and
a lock; the FUSE handles of one inode share it.  Its methods are synchronous (file I/O and
the cipher, which may wait for the GPU) and run in worker threads.  A write re-encrypts the
extents it touches (decrypting the partial ones at its edges first) and writes their records
before the header that makes a longer size visible; truncate keeps "plaintext past the size
is zero" true for the last extent, so growing a file later reads zeros.
"""

from __future__ import annotations

import errno
import os
import stat
import threading

from gdevd.errors import GdevError

from .cipher import ExtentCipher
from .extent import (
    EXTENT,
    HEADER_SIZE,
    RECORD,
    Header,
    extents_for,
    lower_size,
    open_records,
    record_offset,
    seal,
)
from .keys import MountKey

_FLAGS = os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC
ZERO_CHUNK = 1 << 20  # growing truncate writes encrypted zeros this much at a time


class EncryptedFile:
    """The plaintext view of one lower file (see the module docstring)."""

    def __init__(self, fd: int, header: Header, mk: MountKey, cipher: ExtentCipher) -> None:
        self.fd, self.header, self.mk, self.cipher = fd, header, mk, cipher
        self.lock = threading.Lock()

    @classmethod
    def create(cls, path: str, mode: int, mk: MountKey, cipher: ExtentCipher,
               dir_fd: int | None = None) -> EncryptedFile:
        """Create ``path`` (which must not exist; relative to ``dir_fd`` if given) as an empty
        encrypted file."""
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | _FLAGS, mode, dir_fd=dir_fd)
        f = cls(fd, Header.new(), mk, cipher)
        f._write_header()
        return f

    @classmethod
    def open(cls, path: str, mk: MountKey, cipher: ExtentCipher,
             dir_fd: int | None = None) -> EncryptedFile:
        """Open an existing encrypted file (relative to ``dir_fd`` if given; a symlink is
        ELOOP); GdevError(EIO) if its header is not intact, ENOENT if not a regular file."""
        fd = _open_regular(path, os.O_RDWR, dir_fd)
        try:
            return cls(fd, read_header(fd, mk), mk, cipher)
        except BaseException:
            os.close(fd)
            raise

    @property
    def size(self) -> int:
        """The plaintext size."""
        return self.header.size

    def _write_header(self) -> None:
        os.pwrite(self.fd, self.header.pack(self.mk), 0)

    def _decrypt(self, first: int, count: int) -> bytes:
        records = os.pread(self.fd, count * RECORD, record_offset(first))
        ct = open_records(self.header, first, records, count)
        return self.cipher.decrypt(self.header.key.xts, first, ct)

    def _encrypt_write(self, first: int, plain: bytes | bytearray) -> None:
        ct = self.cipher.encrypt(self.header.key.xts, first, bytes(plain))
        os.pwrite(self.fd, seal(self.header, first, ct), record_offset(first))

    def read(self, off: int, size: int) -> bytes:
        """Up to ``size`` bytes at ``off`` (fewer at the end of the file)."""
        with self.lock:
            end = min(off + size, self.header.size)
            if size <= 0 or off >= end:
                return b""
            first, last = off // EXTENT, (end - 1) // EXTENT
            plain = self._decrypt(first, last - first + 1)
            return plain[off - first * EXTENT:end - first * EXTENT]

    def write(self, off: int, data: bytes) -> int:
        """Write ``data`` at ``off`` (past the end: the gap reads as zeros, written
        ZERO_CHUNK at a time); its length.  ENOSPC, and nothing written, if the lower file
        system cannot hold the grown file."""
        with self.lock:
            if data:
                self._check_room(off + len(data))
                self._grow(off)
                self._write(off, data)
            return len(data)

    def _check_room(self, end: int) -> None:
        """ENOSPC unless growing the plaintext to ``end`` fits in the lower file system's
        space available (a tenant's write far past the end would otherwise run until the
        disk is full)."""
        grow = lower_size(end) - lower_size(self.header.size)
        if grow > 0:
            st = os.fstatvfs(self.fd)
            if grow > st.f_bavail * st.f_frsize:
                raise GdevError(errno.ENOSPC, f"{end} bytes do not fit in the lower directory")

    def _grow(self, size: int) -> None:
        """Zeros up to ``size``, ZERO_CHUNK at a time (memory stays bounded however far)."""
        for pos in range(self.header.size, size, ZERO_CHUNK):
            self._write(pos, bytes(min(ZERO_CHUNK, size - pos)))

    def _write(self, off: int, data: bytes) -> None:
        """Write ``data`` at ``off`` <= the size (the extents it touches, at once)."""
        if not data:
            return
        size, end = self.header.size, off + len(data)
        first, last = min(off, size) // EXTENT, (end - 1) // EXTENT
        buf = bytearray((last - first + 1) * EXTENT)
        have = extents_for(size)
        for i in sorted({first, last}):  # edge extents that hold data and are not overwritten
            covered = off <= i * EXTENT and end >= (i + 1) * EXTENT
            if i < have and not covered:
                buf[(i - first) * EXTENT:(i - first + 1) * EXTENT] = self._decrypt(i, 1)
        buf[off - first * EXTENT:end - first * EXTENT] = data
        self._encrypt_write(first, buf)
        if end > size:
            self.header.size = end
            self._write_header()

    def truncate(self, size: int) -> None:
        """Make the plaintext ``size`` bytes long (zeros when it grows)."""
        with self.lock:
            old = self.header.size
            if size > old:
                self._check_room(size)
                self._grow(size)
                return
            if size == old:
                return
            tail = size % EXTENT
            if tail:  # keep the plaintext past the new size zero
                last = size // EXTENT
                plain = bytearray(self._decrypt(last, 1))
                plain[tail:] = bytes(EXTENT - tail)
                self._encrypt_write(last, plain)
            self.header.size = size
            self._write_header()
            os.ftruncate(self.fd, lower_size(size))

    def fsync(self) -> None:
        """Flush the lower file to stable storage."""
        os.fsync(self.fd)

    def close(self) -> None:
        """Close the lower descriptor (idempotent)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def read_header(fd: int, mk: MountKey) -> Header:
    """The authenticated header of the lower file open on ``fd``."""
    return Header.unpack(os.pread(fd, HEADER_SIZE, 0), mk)


def _open_regular(path: str, flags: int, dir_fd: int | None) -> int:
    """``path`` opened without following a symlink and without blocking (a FIFO); ENOENT
    unless it is a regular file."""
    fd = os.open(path, flags | _FLAGS | os.O_NONBLOCK, dir_fd=dir_fd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise GdevError(errno.ENOENT, f"{path}: not a regular file")
    return fd


def plaintext_size(path: str, mk: MountKey, dir_fd: int | None = None) -> int:
    """The plaintext size recorded in ``path``'s header (GdevError(EIO) if not intact)."""
    fd = _open_regular(path, os.O_RDONLY, dir_fd)
    try:
        return read_header(fd, mk).size
    finally:
        os.close(fd)
