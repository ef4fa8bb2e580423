"""A tenant's write far past the end of an ecryptfs file: the gap is filled a chunk at a time
(the daemon's memory stays bounded; it used to allocate the whole gap at once), and a file
that could never fit in the lower file system is refused with ENOSPC before anything is
written (it used to run until the disk was full, or the daemon out of memory)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys

import pytest

from gdevd.errors import GdevError
from gdevd.modules.ecryptfs.cipher import CpuCipher
from gdevd.modules.ecryptfs.files import ZERO_CHUNK, EncryptedFile
from gdevd.modules.ecryptfs.keys import MountKey

GAP = 48 << 20


def _file(tmp_path) -> EncryptedFile:  # type: ignore[no-untyped-def]
    return EncryptedFile.create(str(tmp_path / "f"), 0o600, MountKey(os.urandom(32)),
                                CpuCipher())


# The peak is measured in a child process: tracemalloc counts every thread of its process,
# and in the test process background work of earlier tests (kernel translations) would be
# counted with the write's own allocations.
_FAR_WRITE = """
import os, sys, tracemalloc
from gdevd.modules.ecryptfs.cipher import CpuCipher
from gdevd.modules.ecryptfs.files import EncryptedFile
from gdevd.modules.ecryptfs.keys import MountKey
path, gap = sys.argv[1], int(sys.argv[2])
f = EncryptedFile.create(path, 0o600, MountKey(os.urandom(32)), CpuCipher())
f.write(0, b"head")
tracemalloc.start()
f.write(gap, b"tail")
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
assert f.size == gap + 4, f.size
assert f.read(0, 4) == b"head" and f.read(gap, 8) == b"tail"
assert f.read(gap // 2, 4096) == bytes(4096)
f.close()
print(peak)
"""


def test_a_far_write_fills_the_gap_in_bounded_memory(tmp_path) -> None:  # type: ignore[no-untyped-def]
    r = subprocess.run([sys.executable, "-c", _FAR_WRITE, str(tmp_path / "f"), str(GAP)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    peak = int(r.stdout)
    assert peak < 8 * ZERO_CHUNK, f"peak {peak >> 20} MiB for a {GAP >> 20} MiB gap"


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
