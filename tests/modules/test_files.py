"""Keys, the extent format and EncryptedFile: a hypothesis state machine holds an encrypted
file against a bytearray; tampering, torn records and truncation behind our back are EIO."""

from __future__ import annotations

import errno
import os

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from gdevd.errors import GdevError
from gdevd.modules.ecryptfs import extent as ex
from gdevd.modules.ecryptfs.cipher import CpuCipher
from gdevd.modules.ecryptfs.files import EncryptedFile, plaintext_size
from gdevd.modules.ecryptfs.keys import RECORD_NAME, FileKey, MountKey, open_mount_key

LOG2N = 4  # cheap scrypt for tests


def _mk() -> MountKey:
    return MountKey(os.urandom(32))


def test_mount_record_accepts_the_passphrase_and_rejects_others(lower: str) -> None:
    a = open_mount_key(lower, b"correct horse", LOG2N)
    assert os.path.exists(os.path.join(lower, RECORD_NAME))
    b = open_mount_key(lower, b"correct horse", LOG2N)
    key = FileKey.generate()
    assert b.unwrap(a.wrap(key)) == key  # the same KEK
    with pytest.raises(GdevError) as e:
        open_mount_key(lower, b"wrong", LOG2N)
    assert e.value.errno == errno.EKEYREJECTED and "wrong passphrase" in str(e.value)


def test_a_foreign_mount_record_is_eio(lower: str) -> None:
    with open(os.path.join(lower, RECORD_NAME), "wb") as f:
        f.write(b"not a record")
    with pytest.raises(GdevError) as e:
        open_mount_key(lower, b"x", LOG2N)
    assert e.value.errno == errno.EIO


def test_key_wrap_round_trip_and_tamper() -> None:
    mk, key = _mk(), FileKey.generate()
    wrapped = mk.wrap(key)
    assert len(wrapped) == 104 and key.xts not in wrapped
    assert mk.unwrap(wrapped) == key
    with pytest.raises(GdevError):
        mk.unwrap(bytes([wrapped[0] ^ 1]) + wrapped[1:])
    with pytest.raises(GdevError):
        _mk().unwrap(wrapped)


def _file(tmp_path, data: bytes = b"") -> tuple[EncryptedFile, str, MountKey]:
    mk, path = _mk(), str(tmp_path / "f")
    f = EncryptedFile.create(path, 0o600, mk, CpuCipher())
    f.write(0, data)
    return f, path, mk


def _flip(path: str, offset: int) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 0x40]))


def _eio(fn, *args) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(GdevError) as e:
        fn(*args)
    assert e.value.errno == errno.EIO


def test_layout_and_no_plaintext_on_disk(tmp_path) -> None:
    data = b"secret!" * 2000
    f, path, mk = _file(tmp_path, data)
    f.close()
    assert os.path.getsize(path) == ex.lower_size(len(data)) == 4096 + 4 * ex.RECORD
    raw = open(path, "rb").read()
    assert b"secret!" not in raw
    assert plaintext_size(path, mk) == len(data)
    g = EncryptedFile.open(path, mk, CpuCipher())
    assert g.read(0, 1 << 20) == data
    g.close()


@pytest.mark.parametrize("where", ["ciphertext", "tag", "second extent"])
def test_tampered_extent_is_eio(tmp_path, where: str) -> None:
    f, path, mk = _file(tmp_path, os.urandom(9000))
    offset = {"ciphertext": 4096 + 100, "tag": 4096 + 4096 + 5,
              "second extent": 4096 + ex.RECORD + 17}[where]
    _flip(path, offset)
    if where == "second extent":
        assert len(f.read(0, 4096)) == 4096  # the intact first extent still reads
    _eio(f.read, 0, 9000)
    # a partial write must decrypt the damaged extent first
    _eio(f.write, 4097 if where == "second extent" else 1, b"x")


def test_tampered_header_is_eio(tmp_path) -> None:
    f, path, mk = _file(tmp_path, b"abc")
    f.close()
    for offset in (30, 120):  # the size field, the wrapped key
        _flip(path, offset)
        _eio(EncryptedFile.open, path, mk, CpuCipher())
        _flip(path, offset)
    EncryptedFile.open(path, mk, CpuCipher()).close()
    _eio(EncryptedFile.open, path, _mk(), CpuCipher())  # another mount's key


def test_truncated_lower_file_is_eio(tmp_path) -> None:
    f, path, _ = _file(tmp_path, os.urandom(3 * 4096))
    os.truncate(path, os.path.getsize(path) - 10)
    assert len(f.read(0, 4096)) == 4096
    _eio(f.read, 0, 3 * 4096)


def test_torn_record_is_eio(tmp_path) -> None:
    """A write that reached the disk only in part: half of the new ciphertext, the old tag."""
    f, path, mk = _file(tmp_path, bytes(8192))
    old = open(path, "rb").read()
    f.write(0, os.urandom(8192))
    new = open(path, "rb").read()
    torn = new[:4096 + 2048] + old[4096 + 2048:]
    with open(path, "wb") as out:
        out.write(torn)
    _eio(f.read, 0, 100)


def test_records_cannot_move_between_files_or_places(tmp_path) -> None:
    mk = _mk()
    a = EncryptedFile.create(str(tmp_path / "a"), 0o600, mk, CpuCipher())
    a.write(0, os.urandom(8192))
    raw = open(tmp_path / "a", "rb").read()
    swapped = raw[:4096] + raw[4096 + ex.RECORD:] + raw[4096:4096 + ex.RECORD]
    open(tmp_path / "a", "wb").write(swapped)
    _eio(a.read, 0, 8192)


class FileModel(RuleBasedStateMachine):
    """An EncryptedFile (CPU path) against a bytearray, reopened now and then."""

    def __init__(self) -> None:
        super().__init__()
        import tempfile

        self.dir = tempfile.mkdtemp()
        self.mk = _mk()
        self.path = os.path.join(self.dir, "f")
        self.f = EncryptedFile.create(self.path, 0o600, self.mk, CpuCipher())
        self.model = bytearray()

    @rule(off=st.integers(0, 20000), data=st.binary(min_size=0, max_size=9000))
    def write(self, off: int, data: bytes) -> None:
        assert self.f.write(off, data) == len(data)
        if data:
            if off > len(self.model):
                self.model += bytes(off - len(self.model))
            self.model[off:off + len(data)] = data

    @rule(off=st.integers(0, 30000), size=st.integers(0, 12000))
    def read(self, off: int, size: int) -> None:
        assert self.f.read(off, size) == bytes(self.model[off:off + size])

    @rule(size=st.integers(0, 25000))
    def truncate(self, size: int) -> None:
        self.f.truncate(size)
        self.model = self.model[:size] + bytes(max(0, size - len(self.model)))

    @rule()
    def reopen(self) -> None:
        self.f.close()
        self.f = EncryptedFile.open(self.path, self.mk, CpuCipher())

    @invariant()
    def sizes(self) -> None:
        assert self.f.size == len(self.model)
        assert os.path.getsize(self.path) == ex.lower_size(len(self.model))

    def teardown(self) -> None:
        self.f.close()
        import shutil

        shutil.rmtree(self.dir)


TestFileModel = FileModel.TestCase
TestFileModel.settings = settings(max_examples=40, stateful_step_count=12, deadline=None)
