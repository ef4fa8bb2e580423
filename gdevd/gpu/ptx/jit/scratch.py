"""The scratch directory of a build, and what killed processes left of theirs.

A build writes its C sources, compiler messages and objects in a private temporary
directory, removed when the build ends, even cancelled (``build_dir``).  The compiler's own
temporary files (gcc's ``ccXXXXXX.s`` and ``.o``) go there too (``TMPDIR``, jobs.py), not in
the system's temporary directory.  A process killed by SIGKILL removes nothing, and a
compile's files would stay for ever; so each directory is named for its process
(``gdev-jit-PID-XXXXXXXX``), and the first build of a process removes the directories of
processes that are gone (ours only: owned by this user, real directories, not links).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

PREFIX = "gdev-jit-"
_NAME = re.compile(re.escape(PREFIX) + r"(\d+)-")


def build_dir() -> tempfile.TemporaryDirectory:
    """A new private build directory of this process (a context manager yielding its
    path), after removing those of dead processes once per process."""
    sweep_stale()
    return tempfile.TemporaryDirectory(prefix=f"{PREFIX}{os.getpid()}-")


@functools.cache
def sweep_stale() -> int:
    """Remove the build directories of processes that no longer run (once per process);
    how many were removed."""
    removed = 0
    for d in Path(tempfile.gettempdir()).glob(PREFIX + "*"):
        m = _NAME.match(d.name)
        if m is None or _alive(int(m.group(1))):
            continue
        try:
            st = d.lstat()
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid():
            shutil.rmtree(d, ignore_errors=True)
            removed += 1
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:         # another user's process (EPERM): alive
        return True
    return True
