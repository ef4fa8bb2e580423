"""The runtime object: what every compiled kernel needs but need not compile itself, built
once per cache root and salt: the scheduler (``scheduler.h``: block start, min-PC
scheduling, the slots of an engine thread) and the out-of-line memory translation
(``xlate_rt.h``: the TLB's miss path, other spaces than global, partial blocks).

Compiled into each kernel, these were a third of a small kernel's compile: ``madd``'s unit
took 0.43 s, now 0.29 s, an empty kernel's 0.15 s, now 0.08 s (with the precompiled
prelude); the ISA tests' 66 kernels compile into an empty cache in 18 s instead of 27.5 s.
Whole blocks' global accesses, the hot path, stay in each kernel, where the compiler
specializes them (MADD runs as fast as before).  Kernels call the runtime through the table
whose address every ``struct jctx`` carries (``c->rt``: a call through a pointer, as a
shared library's are), so kernel objects have no undefined symbols and do not depend on
where the runtime lies.  The object lives in ``ROOT/rt/KEY/runtime.so`` with a
summary of its size and digest, checked as kernel objects are before each process loads it;
a damaged one is compiled again.  Making one deletes the directories of other salts.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
from collections.abc import Callable, Hashable
from pathlib import Path

import cffi

from . import cache, scratch
from .jobs import Jobs

UNIT = '#include "scheduler.h"\n'
_lock = threading.Lock()
_known: dict[tuple[Path, str], int] = {}
_libs: list[object] = []            # every loaded runtime stays mapped
_ffi = cffi.FFI()
_ffi.cdef("const void *gdev_jit_runtime(void);")


def address(base: Path, salt: list[str], command: Callable[[list[str]], list[str]],
            flags: list[str], includes: list[str], cancelled: threading.Event,
            owner: Hashable = None) -> int:
    """The address of the runtime's table (``struct jrt``) for ``salt`` under cache root
    ``base``, compiled first if need be by ``command`` with ``flags`` and ``includes`` (those
    of a kernel's compile), as a job of ``owner``'s that dies with us or with ``cancelled``
    (jobs.py); loaded once per process and key.  RuntimeError if it cannot be made (then no
    kernel can run compiled), Cancelled if ``cancelled`` was set meanwhile."""
    key = hashlib.blake2b("\0".join([*salt, *command([])]).encode(),
                          digest_size=12).hexdigest()
    with _lock:
        if (base, key) not in _known:
            _known[base, key] = _ready(base / "rt" / key, command, flags, includes,
                                       cancelled, owner)
        return _known[base, key]


def _ready(where: Path, command, flags: list[str], includes: list[str],
           cancelled: threading.Event, owner: Hashable) -> int:
    so = where / "runtime.so"
    if not _intact(where):
        try:
            _build(where, command, flags, includes, cancelled, owner)
        except (OSError, RuntimeError, ValueError) as exc:
            raise RuntimeError(f"the compiled kernels' runtime failed to build: {exc}") from exc
        if not _intact(where):
            raise RuntimeError(f"the compiled kernels' runtime {so} does not match its summary")
    lib = _ffi.dlopen(str(so))
    _libs.append(lib)
    return int(_ffi.cast("uintptr_t", lib.gdev_jit_runtime()))


def _intact(where: Path) -> bool:
    """Whether ``where`` holds our runtime object as its summary describes it."""
    try:
        size, want = json.loads(cache.read_own(where / "runtime.sum"))
        data = cache.read_own(where / "runtime.so")
    except (OSError, ValueError, TypeError):
        return False
    return len(data) == size and cache.digest(data) == want


def _build(where: Path, command, flags: list[str], includes: list[str],
           cancelled: threading.Event, owner: Hashable) -> None:
    """Compile the runtime in a scratch directory, publish it into ``where`` (renamed into
    place, the summary last) and delete the directories of other salts."""
    with scratch.build_dir() as scratch_dir:
        tmp = Path(scratch_dir)
        unit, so = tmp / "runtime.c", tmp / "runtime.so"
        unit.write_text(UNIT)
        with Jobs(tmp, cancelled, owner=owner) as jobs:
            jobs.start(command([*flags, "-shared", *includes, "-o", str(so), str(unit)]))
            jobs.wait()
        data = so.read_bytes()
    cache.make_private(where)
    cache.publish(where / "runtime.so", data)
    cache.publish(where / "runtime.sum", json.dumps([len(data), cache.digest(data)]).encode())
    for other in where.parent.iterdir():
        if other != where and other.is_dir() and not other.is_symlink():
            shutil.rmtree(other, ignore_errors=True)
