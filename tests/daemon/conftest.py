"""The mount fixture: starts the real ``gdevd`` in the foreground, waits for the mount (failing
fast if the daemon died), yields, and always stops and unmounts it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

import pytest

START_TIMEOUT = 30.0
#: a vGPU of the fixture's daemon: a quarter of 256 MiB outside the 10 % swap area, in pages
VD_256M = 60_395_520


@dataclass
class Gdevd:
    """A running daemon: its mount point, process and log file."""

    mount: str
    proc: subprocess.Popen
    log: str

    def proc_path(self, *parts: str) -> str:
        return os.path.join(self.mount, "proc", "gdev", *parts)

    def dev(self, minor: int) -> str:
        return os.path.join(self.mount, "dev", f"gdev{minor}")

    def log_text(self) -> str:
        with open(self.log) as f:
            return f.read()

    def env(self) -> dict[str, str]:
        return {**os.environ, "GDEV_MOUNT": self.mount}


def read_text(path: str) -> str:
    """The whole text of a (/proc) file."""
    with open(path) as f:
        return f.read()


def write_once(path: str, data: bytes) -> None:
    """One ``write()`` of ``data`` at offset 0 of a truncated file, as ``echo > path`` does."""
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _can_mount() -> str | None:
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse on this machine"
    if shutil.which("fusermount3") is None:
        return "fusermount3 is not installed (apt-get install fuse3)"
    return None


def start_gdevd(*args: str, env: dict[str, str] | None = None) -> Gdevd:
    """Start gdevd on a fresh world-searchable directory (so that tests may act as an
    unprivileged user; pytest's tmp_path is 0700); wait until it serves.  ``env``, if
    given, is the daemon's whole environment."""
    reason = _can_mount()
    if reason:
        pytest.skip(reason)
    base = tempfile.mkdtemp(prefix="gdevd-test-")
    os.chmod(base, 0o755)
    mount = os.path.join(base, "mnt")
    os.mkdir(mount)
    log = os.path.join(base, "gdevd.log")
    proc = subprocess.Popen([sys.executable, "-m", "gdevd", str(mount), "--foreground",
                             "--memory", "256M", "--log", str(log), *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    d = Gdevd(mount, proc, log)
    deadline = time.monotonic() + START_TIMEOUT
    while not os.path.exists(d.proc_path("device_count")):
        if proc.poll() is not None:
            raise RuntimeError(f"gdevd exited with {proc.returncode}:\n{d.log_text()}")
        if time.monotonic() > deadline:
            stop_gdevd(d)
            raise RuntimeError("gdevd did not mount in time")
        time.sleep(0.02)
    return d


def stop_gdevd(d: Gdevd) -> int:
    """SIGTERM, wait, and unmount by force if the daemon could not; the exit status."""
    if d.proc.poll() is None:
        d.proc.send_signal(signal.SIGTERM)
        try:
            d.proc.wait(15)
        except subprocess.TimeoutExpired:
            d.proc.kill()
            d.proc.wait()
    if _in_mount_table(d.mount):  # os.path.ismount is False for a stale mount (ENOTCONN)
        subprocess.run(["fusermount3", "-u", "-z", d.mount], check=False)
    shutil.rmtree(os.path.dirname(d.mount), ignore_errors=True)
    return d.proc.returncode


def _in_mount_table(path: str) -> bool:
    """Whether ``path`` is a mount point in /proc/self/mounts (a live or a stale one)."""
    with open("/proc/self/mounts") as f:
        return any(line.split()[1] == path for line in f)


@pytest.fixture(scope="module")
def gdevd():
    """A gdevd with the defaults but 256 MiB (4 vGPUs of 64 MiB), shared by a test module."""
    d = start_gdevd()
    try:
        yield d
        assert "Traceback" not in d.log_text(), d.log_text()
    finally:
        stop_gdevd(d)


UNPRIVILEGED = "gdevtest"


@pytest.fixture(scope="session")
def unprivileged() -> tuple[int, int]:
    """(uid, gid) of an unprivileged user, created with useradd if missing (needs root)."""
    import pwd

    if os.geteuid() != 0:
        pytest.skip("acting as another user needs root (tests run as root in CI)")
    try:
        pw = pwd.getpwnam(UNPRIVILEGED)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                        UNPRIVILEGED], check=True)
        pw = pwd.getpwnam(UNPRIVILEGED)
    return pw.pw_uid, pw.pw_gid


def run_as(user: tuple[int, int] | None, code: str, env: dict[str, str],
           timeout: float = 60, preload: str = "") -> subprocess.CompletedProcess:
    """Run Python ``code`` in a child process, as ``user`` (uid, gid) if given.

    The interpreter may live where the user cannot read it (pyenv under /root), so the child
    starts as root, imports libgdev, the stdlib it needs and ``preload``, then drops to the
    user with setgroups/setgid/setuid before running ``code``: from then on the kernel treats
    it as that user (the FUSE open and SO_PEERCRED see its uid and gid).
    """
    prologue = ("import errno, os, socket, sys, time, signal, libgdev, libgdev.abi, numpy\n"
                "import libgdev.handle\n")  # the client loads lazily: before the drop
    prologue += preload
    if user is not None:
        prologue += f"os.setgroups([]); os.setgid({user[1]}); os.setuid({user[0]})\n"
    return subprocess.run([sys.executable, "-c", prologue + code], env=env,
                          capture_output=True, text=True, timeout=timeout, cwd="/")
