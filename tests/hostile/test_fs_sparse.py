"""A tenant's write far past the end of an ecryptfs file: the gap is filled a chunk at a time
(the daemon's memory stays bounded; it used to allocate the whole gap at once), and a file
that could never fit in the lower file system is refused with ENOSPC before anything is
written (it used to run until the disk was full, or the daemon out of memory)."""

from __future__ import annotations

import errno
import os
import tracemalloc

import pytest

from gdevd.errors import GdevError
from gdevd.modules.ecryptfs.cipher import CpuCipher
from gdevd.modules.ecryptfs.files import ZERO_CHUNK, EncryptedFile
from gdevd.modules.ecryptfs.keys import MountKey

GAP = 48 << 20


def _file(tmp_path) -> EncryptedFile:  # type: ignore[no-untyped-def]
    return EncryptedFile.create(str(tmp_path / "f"), 0o600, MountKey(os.urandom(32)),
                                CpuCipher())


def test_a_far_write_fills_the_gap_in_bounded_memory(tmp_path) -> None:  # type: ignore[no-untyped-def]
    f = _file(tmp_path)
    try:
        f.write(0, b"head")
        tracemalloc.start()
        try:
            f.write(GAP, b"tail")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 8 * ZERO_CHUNK, f"peak {peak >> 20} MiB for a {GAP >> 20} MiB gap"
        assert f.size == GAP + 4
        assert f.read(0, 4) == b"head" and f.read(GAP, 8) == b"tail"
        assert f.read(GAP // 2, 4096) == bytes(4096)
    finally:
        f.close()


@pytest.mark.parametrize("how", ["write", "truncate"])
def test_a_file_that_cannot_fit_is_refused_unchanged(tmp_path, how: str) -> None:  # type: ignore[no-untyped-def]
    f = _file(tmp_path)
    try:
        f.write(0, b"data")
        st = os.statvfs(tmp_path)
        beyond = st.f_blocks * st.f_frsize + (1 << 30)  # more than the whole file system
        with pytest.raises(GdevError) as e:
            f.write(beyond, b"x") if how == "write" else f.truncate(beyond)
        assert e.value.errno == errno.ENOSPC
        assert f.size == 4 and os.fstat(f.fd).st_size == os.path.getsize(tmp_path / "f")
        assert f.read(0, 10) == b"data"
    finally:
        f.close()
