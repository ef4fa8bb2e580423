"""D10-D12 and #17's "one mistake breaks the mount": what the daemon's own tree answers to
operations it does not do is Linux's errno, never ENOSYS (which the FUSE kernel module would
remember for the whole mount), and file-handle numbers never reach a module by accident."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess

import pytest

from tests.hostile.conftest import HostileFs

pytestmark = pytest.mark.mount


def _errno(fn, *args) -> int:  # type: ignore[no-untyped-def]
    try:
        fn(*args)
    except OSError as exc:
        return exc.errno
    return 0


def _create(path: str) -> None:
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))


def test_mistakes_in_dev_and_proc_leave_creates_working(hfs: HostileFs) -> None:
    """touch MOUNT/dev/x, echo > a mistyped /proc path, mknod, mkdir: refused as Linux does;
    creating files in the ecryptfs subtree still works afterwards, from the user's side."""
    m = hfs.d.mount
    touch = subprocess.run(["touch", os.path.join(m, "dev", "x")], capture_output=True,
                           text=True)
    assert touch.returncode != 0 and "not implemented" not in touch.stderr, touch.stderr
    echo = subprocess.run(["sh", "-c", f"echo 5 > {m}/proc/gdev/typo"], capture_output=True,
                          text=True)
    assert echo.returncode != 0 and "not implemented" not in echo.stderr, echo.stderr
    assert _errno(_create, os.path.join(m, "dev", "y")) == errno.EACCES
    assert _errno(os.mknod, os.path.join(m, "dev", "z"), stat.S_IFREG | 0o600) == errno.EPERM
    assert _errno(os.mkdir, os.path.join(m, "proc", "gdev", "d")) == errno.EPERM
    assert _errno(os.symlink, "x", os.path.join(m, "dev", "s")) == errno.EPERM
    assert _errno(os.unlink, os.path.join(m, "dev", "gdev0")) == errno.EPERM
    assert _errno(os.getxattr, os.path.join(m, "dev", "gdev0"), "user.x") == errno.EOPNOTSUPP
    for i in range(3):  # after all that, ecryptfs still creates files (and mknod works too)
        p = os.path.join(hfs.view, f"after-mistakes-{i}")
        with open(p, "w") as f:
            f.write("still fine\n")
        with open(p) as f:
            assert f.read() == "still fine\n"
        os.unlink(p)
    os.mknod(os.path.join(hfs.view, "by-mknod"), stat.S_IFREG | 0o600)
    assert os.path.getsize(os.path.join(hfs.view, "by-mknod")) == 0
    os.unlink(os.path.join(hfs.view, "by-mknod"))
    assert _errno(os.mknod, os.path.join(hfs.view, "fifo"), stat.S_IFIFO | 0o600) == errno.EPERM


def test_fsync_on_proc_does_not_switch_fsync_off(hfs: HostileFs) -> None:
    """fsync of a /proc file is EINVAL each time (an ENOSYS would have made the kernel answer
    0 from then on without asking anyone), and fsync in ecryptfs still reaches the module:
    an fsync of a directory whose lower directory is gone reports the module's ENOENT."""
    fd = os.open(hfs.d.proc_path("device_count"), os.O_RDONLY)
    try:
        assert _errno(os.fsync, fd) == errno.EINVAL
        assert _errno(os.fsync, fd) == errno.EINVAL  # asked again: not remembered
    finally:
        os.close(fd)
    dfd = os.open(hfs.d.proc_path(), os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert _errno(os.fsync, dfd) == 0
    finally:
        os.close(dfd)
    p = os.path.join(hfs.view, "synced")
    with open(p, "w") as f:
        f.write("data")
        f.flush()
        os.fsync(f.fileno())
    os.unlink(p)
    os.mkdir(os.path.join(hfs.view, "gone"))
    dfd = os.open(os.path.join(hfs.view, "gone"), os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert _errno(os.fsync, dfd) == 0
        shutil.rmtree(os.path.join(hfs.lower, "gone"))  # behind the module's back
        assert _errno(os.fsync, dfd) == errno.ENOENT
    finally:
        os.close(dfd)


def test_file_handles_never_collide_with_a_module_root(hfs: HostileFs) -> None:
    """Opening /proc files until the daemon's handle numbers pass the ecryptfs root inode:
    every read answers (a handle routed to the module would be EBADF), every device file
    opened is closed again (no session left behind)."""
    root = os.stat(hfs.view).st_ino
    assert root < 1 << 20  # the subtree's root is an inode of the daemon's own tree
    for _ in range(root + 3):
        with open(hfs.d.proc_path("device_count")) as f:
            assert f.read().strip().isdigit()
        with open(hfs.d.dev(0), "rb") as f:
            f.read()
    with open(hfs.d.proc_path("modules")) as f:
        assert "ecryptfs" in f.read()


def test_failed_lookups_keep_nothing(hfs: HostileFs) -> None:
    """D9: thousands of lookups of missing names (and of a FIFO, which is not served) leave
    the daemon's memory where it was."""
    os.mkfifo(os.path.join(hfs.lower, "a-fifo"))
    try:
        def lookups(n: int, tag: str) -> None:
            for i in range(n):
                assert not os.path.exists(os.path.join(hfs.view, f"missing-{tag}-{i:05d}"))
                assert not os.path.exists(os.path.join(hfs.view, "a-fifo"))
        lookups(2000, "warm")
        before = _rss_kib(hfs.d.proc.pid)
        lookups(20000, "many")
        grown = _rss_kib(hfs.d.proc.pid) - before
        print(f"gdevd RSS growth over 20000 failed lookups: {grown} KiB")  # shown with -s
        # ~300 bytes each before the fix: 20000 would be ~6 MiB
        assert grown < 2048, f"RSS grew {grown} KiB over 20000 failed lookups"
    finally:
        os.unlink(os.path.join(hfs.lower, "a-fifo"))


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
