"""Passphrase, mount record and per-file keys (eCryptfs's FEK wrapped by a FEKEK).

A passphrase becomes 64 bytes through scrypt (salt and cost stored in the lower directory's
mount record ``.gdev-ecryptfs``): the first 32 bytes are the key-encryption key (KEK), the
other 32 authenticate the record (a verifier), so a wrong passphrase is refused at mount time
instead of producing garbage.  Each file has its own random key of 96 bytes: 64 for
AES-256-XTS (K1 || K2) and 32 for the extents' HMAC-SHA256; it is stored wrapped with
AES key wrap (RFC 3394) under the KEK, as eCryptfs stores a file's FEK wrapped by the FEKEK.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import os
import stat
import struct
from dataclasses import dataclass

from cryptography.hazmat.primitives.keywrap import InvalidUnwrap, aes_key_unwrap, aes_key_wrap

from gdevd.errors import GdevError

RECORD_NAME = ".gdev-ecryptfs"
RECORD_MAGIC = b"GDEVECFS"
RECORD_FMT = "<8sIIII16s32s"  # magic, version, log2 n, r, p, salt, verifier
RECORD_VERSION = 1
FILE_KEY_SIZE = 96
WRAPPED_KEY_SIZE = FILE_KEY_SIZE + 8
_VERIFY_LABEL = b"gdev-ecryptfs mount record v1"
SCRYPT_R, SCRYPT_P, SCRYPT_MAXMEM = 8, 1, 256 << 20
MAX_LOG2N = 17  # 128 * r * 2**n must stay under SCRYPT_MAXMEM (with OpenSSL's margin)


@dataclass(frozen=True)
class FileKey:
    """A file's key material: ``xts`` (64 bytes, K1 || K2) and ``mac`` (32 bytes)."""

    xts: bytes
    mac: bytes

    @classmethod
    def generate(cls) -> FileKey:
        """A fresh random key (``os.urandom``)."""
        raw = os.urandom(FILE_KEY_SIZE)
        return cls(raw[:64], raw[64:])

    def raw(self) -> bytes:
        """The 96 bytes that get wrapped."""
        return self.xts + self.mac


class MountKey:
    """The KEK derived from a passphrase, checked against (or written to) a mount record."""

    def __init__(self, kek: bytes) -> None:
        if len(kek) != 32:
            raise ValueError("the KEK is 32 bytes")
        self._kek = kek

    def wrap(self, key: FileKey) -> bytes:
        """``key`` wrapped under the KEK (RFC 3394): ``WRAPPED_KEY_SIZE`` bytes."""
        return aes_key_wrap(self._kek, key.raw())

    def unwrap(self, wrapped: bytes) -> FileKey:
        """The file key inside ``wrapped``; GdevError(EIO) if it does not unwrap (tampered)."""
        try:
            raw = aes_key_unwrap(self._kek, wrapped)
        except (InvalidUnwrap, ValueError):
            raise GdevError(errno.EIO, "a file key does not unwrap (header tampered)") from None
        if len(raw) != FILE_KEY_SIZE:
            raise GdevError(errno.EIO, "a file key of the wrong size")
        return FileKey(raw[:64], raw[64:])


def _derive(passphrase: bytes, salt: bytes, log2n: int, r: int, p: int) -> tuple[bytes, bytes]:
    try:
        out = hashlib.scrypt(passphrase, salt=salt, n=1 << log2n, r=r, p=p, dklen=64,
                             maxmem=SCRYPT_MAXMEM)
    except (ValueError, MemoryError) as exc:
        raise GdevError(errno.EINVAL, f"scrypt n=2^{log2n}, r={r}, p={p}: {exc}") from None
    return out[:32], out[32:]


def _verifier(vkey: bytes) -> bytes:
    return hmac.new(vkey, _VERIFY_LABEL, hashlib.sha256).digest()


def open_mount_key(lower: str, passphrase: bytes, log2n: int = 14) -> MountKey:
    """The mount key of ``lower``: checked against its record, or a new record if none.

    Raises GdevError(EKEYREJECTED) for a wrong passphrase and GdevError(EIO) for a record
    that is not one of ours.  ``log2n`` (scrypt's cost) only applies to a new record.
    """
    path = os.path.join(lower, RECORD_NAME)
    try:  # not followed if a symlink, not waited on if a FIFO
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return _create_record(path, passphrase, log2n)
    except OSError as exc:
        raise GdevError(errno.EIO, f"{path}: {exc.strerror}") from None
    try:
        size = struct.calcsize(RECORD_FMT)
        data = os.pread(fd, size + 1, 0) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    finally:
        os.close(fd)
    try:
        magic, version, n, r, p, salt, verifier = struct.unpack(RECORD_FMT, data)
    except struct.error:
        raise GdevError(errno.EIO, f"{path}: not an ecryptfs mount record") from None
    if magic != RECORD_MAGIC or version != RECORD_VERSION or not 1 <= n <= MAX_LOG2N \
            or (r, p) != (SCRYPT_R, SCRYPT_P):
        raise GdevError(errno.EIO, f"{path}: not a version-{RECORD_VERSION} mount record "
                                   f"with costs this daemon can derive")
    kek, vkey = _derive(passphrase, salt, n, r, p)
    if not hmac.compare_digest(_verifier(vkey), verifier):
        raise GdevError(errno.EKEYREJECTED, f"wrong passphrase for {lower}")
    return MountKey(kek)


def _create_record(path: str, passphrase: bytes, log2n: int) -> MountKey:
    salt = os.urandom(16)
    kek, vkey = _derive(passphrase, salt, log2n, SCRYPT_R, SCRYPT_P)
    record = struct.pack(RECORD_FMT, RECORD_MAGIC, RECORD_VERSION, log2n, SCRYPT_R, SCRYPT_P, salt,
                         _verifier(vkey))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, record)
        os.fsync(fd)
    finally:
        os.close(fd)
    return MountKey(kek)
