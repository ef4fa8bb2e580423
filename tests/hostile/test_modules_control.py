"""D14-D19: the modules control file and /proc writes under hostile input.

Loading does no blocking I/O on the event loop (a FIFO or device passphrase file, a lower
directory overlapping the mount: refused, the daemon keeps answering), option values that
could never work are refused up front, a multi-line command is refused whole, a /proc value
split over two ``write()`` calls applies once, whole, and no traceback is logged when the
daemon stops with a module loaded.  Each control write runs in a child process with a time
limit, so a daemon that blocks shows up as a failure instead of a hung suite.
"""

from __future__ import annotations

import errno
import logging
import os
import signal
import subprocess
import sys
import tempfile

import pytest

from tests.daemon.conftest import stop_gdevd
from tests.hostile.conftest import HostileFs, start_with_module

pytestmark = pytest.mark.mount
WRITE = ("import sys\ntry:\n    with open(sys.argv[1], 'w') as f:\n        f.write(sys.argv[2])\n"
         "except OSError as e:\n    print(e.errno)\nelse:\n    print(0)\n")


def _control(hfs: HostileFs, text: str, timeout: float = 30) -> int | str:
    """Write ``text`` to /proc/gdev/modules from a child process: its errno, 0, or
    "blocked" if the write did not return in ``timeout`` seconds."""
    try:
        r = subprocess.run([sys.executable, "-c", WRITE, hfs.d.proc_path("modules"), text],
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "blocked"
    return int(r.stdout.strip() or -1)


def _spec(lower: str, **extra: str) -> str:
    opts = {"lower": lower, "cipher": "cpu", "scrypt_log2n": "4", **extra}
    if "passphrase_file" not in opts:
        opts.setdefault("passphrase", "x")
    return "load ecryptfs:" + ",".join(f"{k}={v}" for k, v in opts.items())


def _answers(hfs: HostileFs) -> None:
    with open(hfs.d.proc_path("device_count")) as f:
        assert f.read().strip().isdigit()


def test_blocking_passphrase_files_are_refused(hfs: HostileFs) -> None:
    lower = tempfile.mkdtemp(dir=hfs.base)
    fifo = os.path.join(hfs.base, "pass-fifo")
    os.mkfifo(fifo)
    big = os.path.join(hfs.base, "pass-big")
    with open(big, "wb") as f:
        f.write(b"x" * 10000)
    for path in (fifo, "/dev/zero", big):
        assert _control(hfs, _spec(lower, name="pw", passphrase_file=path)) == errno.EINVAL
        _answers(hfs)
    assert "pw " not in hfs.modules()
    assert "last error" in hfs.modules()


def test_lower_directories_overlapping_the_mount_are_refused(hfs: HostileFs) -> None:
    inside = os.path.join(hfs.view, "inside")
    os.mkdir(inside)
    for lower in (inside, hfs.d.mount, os.path.dirname(hfs.d.mount)):
        assert _control(hfs, _spec(lower, name="ov")) == errno.EINVAL, lower
        _answers(hfs)
    assert "ov " not in hfs.modules()


def test_option_values_that_cannot_work_are_refused(hfs: HostileFs) -> None:
    lower = tempfile.mkdtemp(dir=hfs.base)
    for extra in ({"scrypt_log2n": "18"}, {"scrypt_log2n": "20"}, {"name": "n" * 300},
                  {"name": ".hidden"}, {"name": "a b"}, {"bogus": "1"}):
        assert _control(hfs, _spec(lower, **extra)) == errno.EINVAL, extra
    assert os.listdir(lower) == []  # no mount record written by a refused load
    assert len(hfs.modules().splitlines()) == 3  # header, ecryptfs, last error


def test_a_multi_line_command_is_refused_whole(hfs: HostileFs) -> None:
    lower = tempfile.mkdtemp(dir=hfs.base)
    text = _spec(lower, name="ml") + "\nunload ecryptfs\n"
    assert _control(hfs, text) == errno.EINVAL
    assert " ml " not in hfs.modules() and "ml ecryptfs" not in hfs.modules()
    assert os.path.isdir(hfs.view)
    assert _control(hfs, _spec(lower, name="ml") + "\n") == 0  # one line loads
    assert _control(hfs, "unload ml\n") == 0


def _value(hfs: HostileFs) -> bytes:
    with open(hfs.d.proc_path("band_wait_us"), "rb") as f:
        return f.read().strip()


def test_a_proc_value_split_over_writes_applies_once_whole(hfs: HostileFs) -> None:
    path = hfs.d.proc_path("band_wait_us")
    old = _value(hfs)
    try:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, b"1")
            assert _value(hfs) == old  # not applied fragment by fragment
            os.write(fd, b"23\n")
            assert _value(hfs) == b"123"
            with pytest.raises(OSError) as e:  # a second value on the same open file
                os.write(fd, b"7\n")
            assert e.value.errno == errno.EINVAL
        finally:
            os.close(fd)
        fd = os.open(path, os.O_WRONLY)
        os.write(fd, b"45")
        assert _value(hfs) == b"123"
        os.close(fd)  # no newline: applied when closed
        assert _value(hfs) == b"45"
        for bad in (b"5\n6\n", b"9" * 5000):
            with pytest.raises(OSError) as e, open(path, "wb", buffering=0) as f:
                f.write(bad)
            assert e.value.errno == errno.EINVAL
        assert _value(hfs) == b"45"
    finally:
        with open(path, "wb") as f:
            f.write(old + b"\n")


def test_no_traceback_when_stopping_with_a_module(tmp_path) -> None:
    lower = tmp_path / "lower"
    lower.mkdir()
    passfile = tmp_path / "pass"
    passfile.write_text("x\n")
    d = start_with_module(str(lower), str(passfile))
    try:
        with open(d.proc_path("modules"), "w") as f:  # load and unload one nobody looked up
            f.write(f"load ecryptfs:lower={lower},passphrase=x,name=quiet,cipher=cpu\n")
        with open(d.proc_path("modules"), "w") as f:
            f.write("unload quiet\n")
        with open(os.path.join(d.mount, "ecryptfs", "f"), "w") as f:
            f.write("data")
        d.proc.send_signal(signal.SIGTERM)
        assert d.proc.wait(30) == 0
        log = d.log_text()
        assert "unloaded" in log and "Traceback" not in log, log
    finally:
        stop_gdevd(d)


def _invalidation_report(err: int) -> logging.LogRecord:
    exc = OSError(err, "fuse_lowlevel_notify_inval_entry returned: " + os.strerror(err))
    return logging.LogRecord("pyfuse3", logging.ERROR, __file__, 0, "Failed to submit "
                             "invalidate_entry request for parent inode 1, name b'quiet'",
                             None, (OSError, exc, None))


def test_an_invalidation_after_the_unmount_is_not_reported() -> None:
    # an unload just before SIGTERM: pyfuse3's notify thread submits the invalidation after
    # the session ended (EINVAL), or the kernel never knew the name (ENOENT); both are
    # expected and dropped, other failures are reported
    from gdevd.fuse.stacked import _UnknownEntryFilter
    keep = _UnknownEntryFilter().filter
    assert not keep(_invalidation_report(errno.EINVAL))
    assert not keep(_invalidation_report(errno.ENOENT))
    assert keep(_invalidation_report(errno.EIO))
