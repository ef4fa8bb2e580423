"""A benchmark's gdevd: started on a fresh mount point, waited for, always stopped.

Every benchmark that needs a mounted daemon takes it from :func:`gdevd` (the tests' mount
fixture is ``tests/daemon/conftest.py``; this one is lighter: no log file, no unmount checks,
and it may run another source tree's gdevd through ``env``'s PYTHONPATH).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

START_TIMEOUT = 30.0


@dataclass
class Daemon:
    """A running gdevd: its mount point and process."""

    mount: str
    proc: subprocess.Popen[bytes]


@contextmanager
def gdevd(*args: str, env: dict[str, str] | None = None) -> Iterator[Daemon]:
    """gdevd (with ``args``: ``--memory 1G`` ...) on a temporary mount point, serving once
    ``MOUNT/proc/gdev/device_count`` exists; SystemExit if it dies or takes longer than
    :data:`START_TIMEOUT`.  Stopped with SIGTERM (which unmounts) when the block ends."""
    base = tempfile.mkdtemp(prefix="gdevd-bench-")
    mount = os.path.join(base, "mnt")
    os.mkdir(mount)
    proc = subprocess.Popen([sys.executable, "-m", "gdevd", mount, "--foreground", *args],
                            env=env, cwd=base, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not os.path.exists(os.path.join(mount, "proc", "gdev", "device_count")):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"gdevd did not start (exit status {proc.poll()})")
            time.sleep(0.02)
        yield Daemon(mount, proc)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        for d in (mount, base):  # empty once unmounted; never walk into a live mount
            try:
                os.rmdir(d)
            except OSError:
                pass
