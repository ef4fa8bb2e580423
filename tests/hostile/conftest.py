"""Fixtures for the hostile-tenant campaign (file-system side): a real gdevd with one ecryptfs
module whose lower directory a second, unprivileged user can also write to directly (it owns
``lower/att``, and ``MOUNT/ecryptfs/att`` is the same directory in plaintext), and a
root-owned victim tree outside the lower directory that no attack may change.

A test that used ``ecfs`` ends with the daemon still serving and no traceback in its log.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.daemon.conftest import Gdevd, stop_gdevd, unprivileged  # noqa: F401
from tests.modules.test_mount import _start as start_ecryptfs

PASS = "pass phrase"


@dataclass
class HostileFs:
    """The daemon, its lower directory, the victim tree and the attacker's (uid, gid)."""

    d: Gdevd
    base: str
    lower: str
    victim: str
    user: tuple[int, int]

    @property
    def view(self) -> str:
        return os.path.join(self.d.mount, "ecryptfs")

    def control(self, text: str) -> None:
        """Write ``text`` to /proc/gdev/modules (OSError if refused)."""
        with open(self.d.proc_path("modules"), "w") as f:
            f.write(text)

    def modules(self) -> str:
        with open(self.d.proc_path("modules")) as f:
            return f.read()


def start_with_module(lower: str, passfile: str, extra: str = "") -> Gdevd:
    """A gdevd whose ecryptfs module (cheap scrypt, CPU cipher) serves ``lower``."""
    return start_ecryptfs(lower, passfile, ",cipher=cpu" + extra)


def snapshot(root: str) -> dict[str, tuple[int, int, int, int, bytes]]:
    """Every path under ``root`` with (mode, uid, gid, mtime_ns, content of files)."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            body = open(p, "rb").read() if stat.S_ISREG(st.st_mode) else b""
            out[os.path.relpath(p, root)] = (st.st_mode, st.st_uid, st.st_gid, st.st_mtime_ns,
                                             body)
    return out


def make_victim(base: str) -> str:
    """Root's tree outside the lower directory: 0600 files, an empty subdirectory and a
    root-only (0700) directory."""
    victim = os.path.join(base, "victim")
    os.mkdir(victim, 0o755)
    for name in ("f", "f2", "f3"):
        fd = os.open(os.path.join(victim, name), os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, b"root's secret\n")
        os.close(fd)
    os.mkdir(os.path.join(victim, "sub"), 0o755)
    os.mkdir(os.path.join(victim, "rootonly"), 0o700)
    return victim


@pytest.fixture(scope="module")
def hfs(unprivileged: tuple[int, int]) -> Iterator[HostileFs]:  # noqa: F811
    base = tempfile.mkdtemp(prefix="gdev-hostile-")
    os.chmod(base, 0o755)
    lower = os.path.join(base, "lower")
    os.mkdir(lower, 0o755)
    passfile = os.path.join(base, "pass")
    with open(passfile, "w") as f:
        f.write(PASS + "\n")
    os.chmod(passfile, 0o600)
    victim = make_victim(base)
    d = start_with_module(lower, passfile)
    try:
        att = os.path.join(d.mount, "ecryptfs", "att")
        os.mkdir(att)
        os.chown(att, *unprivileged)
        yield HostileFs(d, base, lower, victim, unprivileged)
        assert d.proc.poll() is None, "gdevd died"
        assert "Traceback" not in d.log_text(), d.log_text()
    finally:
        stop_gdevd(d)
        shutil.rmtree(base, ignore_errors=True)
