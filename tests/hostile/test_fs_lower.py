"""LowerDir in-process: every way in from a name refuses a symlink below the lower root, a
FIFO is never opened blocking, a hard-linked file is never chmod'ed or chown'ed."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator

import pytest

from gdevd.errors import GdevError
from gdevd.modules.ecryptfs.lower import LowerDir


@pytest.fixture
def tree(tmp_path) -> Iterator[tuple[LowerDir, str]]:  # type: ignore[no-untyped-def]
    """A lower dir with ``real/f``, ``link -> outside`` and ``outside/`` (0600 file)."""
    lower, outside = tmp_path / "lower", tmp_path / "outside"
    lower.mkdir()
    outside.mkdir()
    (outside / "f").write_text("outside\n")
    os.chmod(outside / "f", 0o600)
    (lower / "real").mkdir()
    (lower / "real" / "f").write_text("inside\n")
    os.symlink(outside, lower / "link")
    os.symlink(outside / "f", lower / "real" / "flink")
    d = LowerDir(str(lower))
    try:
        yield d, str(outside)
    finally:
        d.close()


def _errno(fn, *args) -> int:  # type: ignore[no-untyped-def]
    try:
        fn(*args)
    except (OSError, GdevError) as exc:
        return exc.errno
    return 0


def test_symlinks_below_the_root_are_never_followed(tree) -> None:  # type: ignore[no-untyped-def]
    d, outside = tree
    before = os.stat(os.path.join(outside, "f"))
    refused = {errno.ENOTDIR, errno.ELOOP}
    assert _errno(d.lstat, "link/f") in refused
    assert _errno(d.open, "link/f", os.O_RDONLY) in refused
    assert _errno(d.open, "real/flink", os.O_RDONLY) in refused  # last component too
    assert _errno(d.chmod, "link/f", 0o666) in refused
    assert _errno(d.chmod, "real/flink", 0o666) in refused
    assert _errno(d.chown, "link/f", 1, 1) in refused
    assert _errno(d.utime, "link/f", 0, 0) in refused
    assert _errno(d.mkdir, "link/new", 0o755, 0, 0) in refused
    assert _errno(d.unlink, "link/f") in refused
    assert _errno(d.rmdir, "link/sub") in refused
    assert _errno(d.rename, "link/f", "real/g", False) in refused
    assert _errno(d.rename, "real/f", "link/g", False) in refused
    assert _errno(d.listdir, "link") in refused
    after = os.stat(os.path.join(outside, "f"))
    assert (after.st_mode, after.st_uid, after.st_mtime_ns) == \
        (before.st_mode, before.st_uid, before.st_mtime_ns)
    assert sorted(os.listdir(outside)) == ["f"]
    assert stat.S_ISLNK(d.lstat("real/flink").st_mode)  # seen as the link it is
    d.unlink("real/flink")  # removing the link itself is fine


def test_fifos_are_not_opened_and_hard_links_not_changed(tree) -> None:  # type: ignore[no-untyped-def]
    d, outside = tree
    os.mkfifo(os.path.join(d.path, "real", "fifo"))
    assert _errno(d.chmod, "real/fifo", 0o666) == errno.ENOENT  # returns: not blocked
    os.link(os.path.join(outside, "f"), os.path.join(d.path, "real", "hard"))
    assert _errno(d.chmod, "real/hard", 0o666) == errno.EPERM
    assert _errno(d.chown, "real/hard", 1, 1) == errno.EPERM
    assert stat.S_IMODE(os.stat(os.path.join(outside, "f")).st_mode) == 0o600
    d.chmod("real/f", 0o640)  # the ordinary case works
    assert stat.S_IMODE(d.lstat("real/f").st_mode) == 0o640
