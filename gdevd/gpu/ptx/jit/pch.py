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
a damaged file is compiled again (salted.py, shared with the kernels' runtime object).
Making one deletes the directories of other salts (the file is some 27 MB).  Only GCC:
clang reads no ``.gch`` through ``#include``.  A compiler that fails to precompile leaves
every compile as it was, after one log line.
"""

from __future__ import annotations

import logging
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

from . import salted

log = logging.getLogger(__name__)
HERE = Path(__file__).resolve().parent
HEADER = "prelude.h"
GCH = f"{HEADER}.gch"
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
    key = salted.key(salt, command)
    with _lock:
        if (base, key) not in _known:
            _known[base, key] = _ready(base / "pch" / key, command, flags, includes,
                                       cancelled or threading.Event())
        return _known[base, key]


def _ready(where: Path, command, flags: list[str], includes: list[str],
           cancelled: threading.Event) -> Path | None:
    if not _is_gcc(command):
        return None
    why = salted.fault(where, GCH)
    if why is None:
        return where
    if why:
        log.warning("precompiled header %s is damaged (%s): compiling it again",
                    where / GCH, why)
    try:
        salted.build(where, GCH, lambda tmp: command([*flags, *includes, "-x", "c-header",
                                                     "-o", str(tmp / GCH), str(HERE / HEADER)]),
                     cancelled)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        log.warning("precompiling %s failed (%s): kernels compile without it", HEADER, exc)
        return None
    return where if salted.fault(where, GCH) is None else None


def _is_gcc(command) -> bool:
    """Whether the compiler is GCC (clang defines __GNUC__ too, and __clang__)."""
    out = subprocess.run(command(["-dM", "-E", "-x", "c", "/dev/null"]), capture_output=True,
                         text=True, check=False)
    return "__GNUC__" in out.stdout and "__clang__" not in out.stdout
