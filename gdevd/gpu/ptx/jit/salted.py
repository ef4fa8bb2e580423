"""A file compiled once per cache root and salt (the precompiled prelude, pch.py; the
kernels' runtime object, runtime.py): its directory's key, its check against a summary of
its size and digest (the cache's rules: only our own regular files are read), and its
compile, as a job in a scratch directory (jobs.py, scratch.py), published into place with
its summary last; making one deletes the directories of other salts beside it."""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
from collections.abc import Callable, Hashable
from pathlib import Path

from . import cache, scratch
from .jobs import Jobs


def key(salt: list[str], command: Callable[[list[str]], list[str]]) -> str:
    """The directory name of ``salt`` and the compiler ``command`` runs."""
    return hashlib.blake2b("\0".join([*salt, *command([])]).encode(),
                           digest_size=12).hexdigest()


def fault(where: Path, name: str) -> str | None:
    """None if ``where/name`` is ours as its summary describes it; else why not ("" when
    there is no summary: never made)."""
    path, summary = where / name, (where / name).with_suffix(".sum")
    if not summary.exists():
        return ""
    try:
        size, want = json.loads(cache.read_own(summary))
        data = cache.read_own(path)
    except (OSError, ValueError, TypeError) as exc:
        return str(exc)
    if len(data) != size or cache.digest(data) != want:
        return f"{name} does not match its summary"
    return None


def build(where: Path, name: str, command_for: Callable[[Path], list[str]],
          cancelled: threading.Event, owner: Hashable = None) -> None:
    """Run ``command_for(tmp)`` (a compile writing ``tmp/name``; it may write its sources
    in ``tmp`` first) as a job of ``owner``'s in a scratch directory, then publish the
    result and its summary into ``where`` and delete the other salts' directories.
    ValueError with the compiler's message if it fails; Cancelled if ``cancelled`` is set."""
    ended: list[tuple[int, str]] = []
    with scratch.build_dir() as scratch_dir:
        tmp = Path(scratch_dir)
        with Jobs(tmp, cancelled, owner=owner) as jobs:
            jobs.start(command_for(tmp),
                       done=lambda status, message: ended.append((status, message)))
            jobs.wait()
        status, message = ended[0]
        if status:
            raise ValueError(message.strip()[-300:] or f"exit status {status}")
        data = (tmp / name).read_bytes()
    cache.make_private(where)
    cache.publish(where / name, data)
    cache.publish((where / name).with_suffix(".sum"),
                  json.dumps([len(data), cache.digest(data)]).encode())
    for other in where.parent.iterdir():
        if other != where and other.is_dir() and not other.is_symlink():
            shutil.rmtree(other, ignore_errors=True)
