"""prelude.h precompiled (GCC's precompiled headers), so that a kernel's compile does not
parse it again.

Every kernel's translation unit begins with ``#include "prelude.h"``; parsing it
(``immintrin.h`` above all) is about a fifth of a small kernel's compile.  GCC reads a valid
``prelude.h.gch`` instead when it finds one in an include directory searched before the
header's own (:func:`include_dir`, which build.py puts first); a ``.gch`` it cannot use
(other flags, another compiler) it skips, falling back to the header.

The header is compiled once per cache root and salt (build.py's: the translator's sources,
the compiler's version, the flags and the target), into ``ROOT/pch/SALT/prelude.h.gch``
with a summary of its size and digest, which each process checks before its first use, so
the cache's rules hold: only our own regular files in a trusted root reach the compiler, and
a damaged file is compiled again.  Making one deletes the directories of other salts (the
file is some 27 MB).  Only GCC: clang reads no ``.gch`` through ``#include``.  A compiler
that fails to precompile leaves every compile as it was, after one log line.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

from . import cache, scratch
from .jobs import Jobs

log = logging.getLogger(__name__)
HERE = Path(__file__).resolve().parent
HEADER = "prelude.h"
_lock = threading.Lock()
_known: dict[tuple[Path, str], Path | None] = {}


def include_dir(base: Path, salt: list[str], command: Callable[[list[str]], list[str]],
                flags: list[str], includes: list[str],
                cancelled: threading.Event | None = None) -> Path | None:
    """The directory holding a checked ``prelude.h.gch`` for ``salt`` under cache root
    ``base``, compiled first if need be by ``command`` (build.py's: the compiler, niced)
    with ``flags`` and ``includes`` (those of a kernel's compile), as a job that dies with
    us or with ``cancelled`` (jobs.py: Cancelled); None when there is none to use (not GCC,
    or it failed).  Decided once per process and compiler."""
    key = hashlib.blake2b("\0".join([*salt, *command([])]).encode(),
                          digest_size=12).hexdigest()
    with _lock:
        if (base, key) not in _known:
            _known[base, key] = _ready(base / "pch" / key, command, flags, includes,
                                       cancelled or threading.Event())
        return _known[base, key]


def _ready(where: Path, command, flags: list[str], includes: list[str],
           cancelled: threading.Event) -> Path | None:
    if not _is_gcc(command):
        return None
    if _intact(where):
        return where
    try:
        _build(where, command, flags, includes, cancelled)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        log.warning("precompiling %s failed (%s): kernels compile without it", HEADER, exc)
        return None
    return where if _intact(where) else None


def _is_gcc(command) -> bool:
    """Whether the compiler is GCC (clang defines __GNUC__ too, and __clang__)."""
    out = subprocess.run(command(["-dM", "-E", "-x", "c", "/dev/null"]), capture_output=True,
                         text=True, check=False)
    return "__GNUC__" in out.stdout and "__clang__" not in out.stdout


def _intact(where: Path) -> bool:
    """Whether ``where`` holds our ``.gch`` as its summary describes it."""
    gch, summary = where / f"{HEADER}.gch", where / f"{HEADER}.sum"
    if not summary.exists():
        return False
    try:
        size, want = json.loads(cache.read_own(summary))
        data = cache.read_own(gch)
        if len(data) != size or cache.digest(data) != want:
            raise ValueError(f"{gch.name} does not match its summary")
    except (OSError, ValueError, TypeError) as exc:
        log.warning("precompiled header %s is damaged (%s): compiling it again", gch, exc)
        return False
    return True


def _build(where: Path, command, flags: list[str], includes: list[str],
           cancelled: threading.Event) -> None:
    """Compile the header in a scratch directory (a job of its own group: jobs.py), publish
    it into ``where`` (renamed into place, the summary last) and delete the directories of
    other salts."""
    ended: list[tuple[int, str]] = []
    with scratch.build_dir() as scratch_dir:
        tmp = Path(scratch_dir)
        gch = tmp / f"{HEADER}.gch"
        with Jobs(tmp, cancelled) as jobs:
            jobs.start(command([*flags, *includes, "-x", "c-header", "-o", str(gch),
                                str(HERE / HEADER)]),
                       done=lambda status, message: ended.append((status, message)))
            jobs.wait()
        status, message = ended[0]
        if status:
            raise ValueError(message.strip()[-300:] or f"exit status {status}")
        data = gch.read_bytes()
    cache.make_private(where)
    cache.publish(where / f"{HEADER}.gch", data)
    cache.publish(where / f"{HEADER}.sum", json.dumps([len(data), cache.digest(data)]).encode())
    for other in where.parent.iterdir():
        if other != where and other.is_dir() and not other.is_symlink():
            shutil.rmtree(other, ignore_errors=True)
