"""The ioctl socket's private directory, and the clean-up of those a killed daemon left.

By default the socket lives in a fresh directory ``$TMPDIR/gdevd-XXXXXXXX`` (mode 0755) with a
``pid`` file naming the daemon.  A daemon that exits removes its directory; one that was
killed cannot, so each start removes the directories of daemons that are gone
(:func:`clean_stale`).  A directory is only removed when all of these hold: its name has the
prefix, it is a real directory owned by this user, its ``pid`` file names a process that no
longer exists, and its socket (if any) refuses connections.  Anything else is left alone.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import socket
import stat
import tempfile

log = logging.getLogger("gdevd")
PREFIX = "gdevd-"
SOCKET = "ioctl.sock"
PID_FILE = "pid"


def make_socket_dir() -> str:
    """Create the private directory (with its pid file); the socket path inside it."""
    path = tempfile.mkdtemp(prefix=PREFIX)
    os.chmod(path, 0o755)
    with open(os.path.join(path, PID_FILE), "w") as f:
        f.write(f"{os.getpid()}\n")
    return os.path.join(path, SOCKET)


def clean_stale(parent: str | None = None) -> list[str]:
    """Remove the socket directories of daemons that are gone; the paths removed."""
    parent = parent or tempfile.gettempdir()
    removed: list[str] = []
    try:
        names = os.listdir(parent)
    except OSError:
        return removed
    for name in names:
        path = os.path.join(parent, name)
        if name.startswith(PREFIX) and _is_stale(path):
            shutil.rmtree(path, ignore_errors=True)
            log.info("removed %s, left by a gdevd that is gone", path)
            removed.append(path)
    return removed


def _is_stale(path: str) -> bool:
    try:
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            return False
        with open(os.path.join(path, PID_FILE)) as f:
            pid = int(f.read().strip())
    except (OSError, ValueError):
        return False
    return not _alive(pid) and not _answers(os.path.join(path, SOCKET))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _answers(path: str) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        try:
            s.connect(path)
        except OSError as exc:
            return exc.errno not in (errno.ECONNREFUSED, errno.ENOENT)
    return True
