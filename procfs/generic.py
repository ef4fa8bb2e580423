"""One read and one write for every /proc/gdev entry (the table is :mod:`procfs.table`).

Like sysfs, a write at offset 0 carries the whole new value (``echo 30 > file`` opens with
O_TRUNC, then writes ``b"30\\n"`` at offset 0); any other offset, a value of more than one
line or over :data:`VALUE_MAX` bytes, a malformed value or an out-of-range one is refused
with ``GdevError(EINVAL)`` before anything changes.  (The FUSE front assembles a value that a
writer split over several ``write()`` calls before it comes here: see ``gdevd.fuse.ops``.)
"""

from __future__ import annotations

import errno
import logging
from typing import Any

from gdevd.errors import GdevError
from procfs.entry import Entry

VALUE_MAX = 4096  # one page, as Linux's proc_sys writes
log = logging.getLogger("gdevd.procfs")


def read_entry(entry: Entry, target: Any) -> bytes:
    """The current text of ``entry`` for ``target`` (the system or a vGPU)."""
    return entry.format(entry.get(target))


def write_entry(entry: Entry, target: Any, offset: int, data: bytes) -> int:
    """Apply a write; return the number of bytes consumed (all of them).

    EINVAL for a read-only entry, a nonzero offset, or a bad value; the setter's own errno
    (e.g. EBUSY) otherwise.  Nothing changes unless the whole value is accepted.  Every
    refusal is logged (a warning naming the file, the value and why: range, choices), since
    the writer sees only the errno.
    """
    try:
        return _apply(entry, target, offset, data)
    except GdevError as exc:
        log.warning("/proc/gdev/%s: refused %r: %s", label(entry, target), data[:64],
                    exc.detail or exc)
        raise


def label(entry: Entry, target: Any) -> str:
    """The entry's path under /proc/gdev (``vdN/NAME`` for a vGPU's entry)."""
    minor = getattr(target, "minor", None)
    if entry.scope == "vgpu" and isinstance(minor, int):
        return f"vd{minor}/{entry.name}"
    module = getattr(target, "name", None)
    if entry.scope == "module" and isinstance(module, str):
        return f"{module}/{entry.name}"
    return entry.name


def _apply(entry: Entry, target: Any, offset: int, data: bytes) -> int:
    if entry.set is None:
        raise GdevError(errno.EINVAL, f"{entry.name} is read-only")
    if offset != 0:
        raise GdevError(errno.EINVAL, f"{entry.name}: write at offset {offset}, not 0")
    if len(data) > VALUE_MAX or b"\n" in data.rstrip(b"\n"):
        raise GdevError(errno.EINVAL, f"{entry.name}: one value of one line, at most "
                                      f"{VALUE_MAX} bytes, per write")
    value = entry.parse(data)
    entry.validate(value)
    entry.set(target, value)
    return len(data)
