"""The mount fixture: starts the real ``gdevd`` in the foreground, waits for the mount (failing
fast if the daemon died), yields, and always stops and unmounts it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

import pytest

START_TIMEOUT = 30.0


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


def _can_mount() -> str | None:
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse on this machine"
    if shutil.which("fusermount3") is None:
        return "fusermount3 is not installed (apt-get install fuse3)"
    return None


def start_gdevd(tmp_path, *args: str) -> Gdevd:
    """Start gdevd on a fresh directory under ``tmp_path``; wait until it serves."""
    reason = _can_mount()
    if reason:
        pytest.skip(reason)
    mount = tmp_path / "mnt"
    mount.mkdir()
    log = tmp_path / "gdevd.log"
    proc = subprocess.Popen([sys.executable, "-m", "gdevd", str(mount), "--foreground",
                             "--memory", "256M", "--log", str(log), *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    d = Gdevd(str(mount), proc, str(log))
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
    if os.path.ismount(d.mount):
        subprocess.run(["fusermount3", "-u", "-z", d.mount], check=False)
    return d.proc.returncode


@pytest.fixture(scope="module")
def gdevd(tmp_path_factory):
    """A gdevd with the defaults (1 GPU of 256 MiB, 4 vGPUs), shared by a test module."""
    d = start_gdevd(tmp_path_factory.mktemp("gdevd"))
    try:
        yield d
    finally:
        stop_gdevd(d)
