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

import threading
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

import cffi

from . import salted

UNIT = '#include "scheduler.h"\n'
SO = "runtime.so"
_lock = threading.Lock()
_known: dict[tuple[Path, str], int] = {}
_libs: list[object] = []            # every loaded runtime stays mapped
_ffi = cffi.FFI()
_ffi.cdef("""
const void *gdev_jit_runtime(void);
void gdev_jit_parallel(void *run, void **cs, const int *counts, int ngroups, int64_t budget);
""")
_parallel: dict[int, Any] = {}      # table address -> its object's gdev_jit_parallel


def address(base: Path, salt: list[str], command: Callable[[list[str]], list[str]],
            flags: list[str], includes: list[str], cancelled: threading.Event,
            owner: Hashable = None) -> int:
    """The address of the runtime's table (``struct jrt``) for ``salt`` under cache root
    ``base``, compiled first if need be by ``command`` with ``flags`` and ``includes`` (those
    of a kernel's compile), as a job of ``owner``'s that dies with us or with ``cancelled``
    (jobs.py); loaded once per process and key.  RuntimeError if it cannot be made (then no
    kernel can run compiled), Cancelled if ``cancelled`` was set meanwhile."""
    key = salted.key(salt, command)
    with _lock:
        if (base, key) not in _known:
            _known[base, key] = _ready(base / "rt" / key, command, flags, includes,
                                       cancelled, owner)
        return _known[base, key]


def _ready(where: Path, command, flags: list[str], includes: list[str],
           cancelled: threading.Event, owner: Hashable) -> int:
    so = where / SO
    if salted.fault(where, SO) is not None:

        def compile_in(tmp: Path) -> list[str]:
            (tmp / "runtime.c").write_text(UNIT)
            return command([*flags, "-shared", *includes, "-o", str(tmp / SO),
                            str(tmp / "runtime.c")])
        try:
            salted.build(where, SO, compile_in, cancelled, owner)
        except (OSError, ValueError) as exc:
            raise RuntimeError(f"the compiled kernels' runtime failed to build: {exc}") from exc
        if salted.fault(where, SO) is not None:
            raise RuntimeError(f"the compiled kernels' runtime {so} does not match its summary")
    lib = _ffi.dlopen(str(so))
    _libs.append(lib)
    table = int(_ffi.cast("uintptr_t", lib.gdev_jit_runtime()))
    _parallel[table] = lib.gdev_jit_parallel
    return table


def parallel(table: int, run, cs, counts: list[int], budget: int) -> None:
    """Run one slice of a launch on the engine threads (team.h): ``cs`` (a ``struct jctx
    *[]``) holds ``len(counts)`` groups of slots, group g the next ``counts[g]`` entries,
    each run by ``run`` (a kernel's ``NAME_run``) with ``budget``; group 0 on this thread.
    ``table`` is the address :func:`address` returned.  Returns once every group did (the
    GIL is released meanwhile)."""
    _parallel[table](_ffi.cast("void *", run), _ffi.cast("void **", cs), counts,
                     len(counts), budget)
