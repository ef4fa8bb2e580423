"""Compiling a module's kernels to a shared object, cached on disk by content hash.

The cache key hashes the PTX text, the translator's own sources (this package and the C
headers it includes), the compiler's version, the flags and the target that
``-march=native`` resolves to on this CPU (a cache shared between machines must not hand
one machine code with instructions its CPU lacks), so a module loaded again costs one
``dlopen`` and a small manifest read.  :mod:`.cache` keeps the entries whole and refuses a
cache directory others could write to.

The compiler runs at a lower priority (``nice``, :func:`set_nice`), one process per core,
the largest translation units first, so that tiered compilation in the background takes
idle cycles from running kernels, not their time; the processes of one build die with the
process that started it, and with the build (:mod:`.jobs`).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Hashable
from pathlib import Path

from . import cache, pch, runtime, scratch
from .cgen import kernel_c, relative
from .compiled import Compiled
from .jobs import Jobs
from .operands import Unsupported

log = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
CSRC = HERE.parent.parent / "csrc"
NICE_MAX = 19
_nice = 10          # niceness of the compiler processes (0 = as the daemon)
FLAGS = ["-O2", "-march=native", "-ffp-contract=off", "-fno-strict-aliasing", "-fPIC",
         "-fvisibility=default", "-w"]
def set_nice(value: int) -> None:
    """Run the compiler processes started from now on at niceness ``value`` (0..19)."""
    global _nice
    if not 0 <= value <= NICE_MAX:
        raise ValueError(f"nice must be within 0..{NICE_MAX}")
    _nice = value


def nice() -> int:
    """The niceness the compiler runs at."""
    return _nice


@functools.cache
def compiler() -> str | None:
    """The C compiler's path (``$CC`` or ``cc``), None if there is none."""
    return shutil.which(os.environ.get("CC", "cc"))


@functools.cache
def _compiler_version(cc: str) -> str:
    out = subprocess.run([cc, "--version"], capture_output=True, text=True, check=False)
    return out.stdout.splitlines()[0] if out.stdout else cc


@functools.cache
def _sources_digest() -> str:
    h = hashlib.blake2b(digest_size=16)
    for p in sorted(HERE.glob("*.py")) + sorted(HERE.glob("*.h")) + [
            CSRC / "mmu_internal.h", CSRC / "gdev_core.h", CSRC / "heap.h"]:
        h.update(p.read_bytes())
    return h.hexdigest()


@functools.cache
def _target(cc: str, march: str) -> str:
    """What ``march`` (``-march=native``) means to compiler ``cc`` on this CPU: GCC's
    resolved target options, else the driver's expanded command line (clang)."""
    out = subprocess.run([cc, march, "-Q", "--help=target"], capture_output=True,
                         text=True, check=False)
    if out.returncode == 0 and out.stdout:
        return out.stdout
    out = subprocess.run([cc, march, "-###", "-x", "c", "-c", "-o", os.devnull, os.devnull],
                         capture_output=True, text=True, check=False)
    return out.stderr


def _salt() -> list[str]:
    """What, besides the source, decides the machine code: the translator's sources, the
    compiler's version, the flags and the target ``-march=native`` resolves to."""
    cc = compiler() or "cc"
    march = next(f for f in FLAGS if f.startswith("-march="))
    return [_sources_digest(), _compiler_version(cc), " ".join(FLAGS), _target(cc, march)]


def cache_key(ptx: str) -> str:
    """Content hash naming a module's compiled form (on this compiler and this CPU)."""
    h = hashlib.blake2b(digest_size=20)
    for part in (ptx, *_salt()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _command(args: list[str]) -> list[str]:
    """``cc args`` run through ``nice`` at the configured niceness (as is without ``nice``)."""
    cmd = [compiler() or "cc", *args]
    tool = shutil.which("nice") if _nice else None
    return [tool, "-n", str(_nice), *cmd] if tool else cmd


def _size(info) -> int:
    """A kernel's instruction count: the estimate of its compile time that orders the jobs."""
    return sum(len(b.instrs) for b in info.blocks)


def _source(module, info, fname: str) -> str:
    """The C translation unit of one kernel (Unsupported if it cannot be translated)."""
    return '#include "prelude.h"\n' + kernel_c(module, info, fname)


_PLACEHOLDER = "GDEV_KFN"


def _kernel_unit(module, info) -> tuple[str, str]:
    """(C function name, translation unit) of one kernel, named by the hash of its C: the
    translation counts PTX lines from the kernel's first (:func:`~.cgen.relative`), so two
    kernels that differ only in name or place (a template instantiated twice, one kernel in
    two programs) are one object, compiled once and kept in the object cache."""
    rel, _ = relative(info)
    text = _source(module, rel, _PLACEHOLDER)
    h = hashlib.blake2b(digest_size=10)
    for part in (text, *_salt()):
        h.update(part.encode())
        h.update(b"\0")
    fname = "h" + h.hexdigest()
    return fname, text.replace(_PLACEHOLDER, fname)


def _translate(module) -> tuple[list[str], dict[str, str], dict[str, str]]:
    """(C source of each distinct translated kernel, C name per kernel, reason per rejected
    one), in the module's order, translated but not compiled (for tests and tools)."""
    parts: dict[str, str] = {}
    kernels, rejected = {}, {}
    for name, info in module.kernels.items():
        try:
            fname, parts[fname] = _kernel_unit(module, info)
            kernels[name] = fname
        except Unsupported as exc:
            rejected[name] = str(exc)
    return list(parts.values()), kernels, rejected




def build(module, ptx: str, cancelled: threading.Event | None = None,
          into: Compiled | None = None, owner: Hashable = None) -> Compiled:
    """The compiled form of ``module`` (whose source text is ``ptx``), from the cache or cc,
    filled into ``into`` (a new :class:`Compiled` if None) kernel by kernel as each is ready;
    its compiler slots are granted to ``owner`` (a tenant: jit/slots.py).

    Raises RuntimeError once every other kernel is done if the compiler failed for some
    (they stay on the interpreter, the reason in ``rejected``), :class:`~.jobs.Cancelled`
    once ``cancelled`` is set (its compiler processes are killed); kernels the translator
    cannot handle are in ``rejected`` with the reason.  A damaged cache entry or object is
    compiled again and replaced.  One process compiles a key at a time
    (:func:`.cache.building`): another that wants it meanwhile waits and loads its entry.
    """
    t0 = time.monotonic()
    c = Compiled() if into is None else into
    try:
        _fill(module, ptx, c, cancelled or threading.Event(), owner)
    finally:
        c.finish(time.monotonic() - t0)
    return c


def _fill(module, ptx: str, c: Compiled, stop: threading.Event, owner: Hashable) -> None:
    key, base = cache_key(ptx), cache.root()
    c.runtime = runtime.address(base, _salt(), _command, FLAGS, INCLUDES, stop, owner)
    if _load_cached(c, base, key):
        c.cached = True
        return
    with cache.building(base, key, stop.is_set):
        if _load_cached(c, base, key):          # built by the holder we waited for
            c.cached = True
            return
        with scratch.build_dir() as tmp:
            failed = _compile(module, c, Path(tmp), stop, base, owner)
        if not failed:
            cache.store(base, key, _in_order(module, c.kernels), _in_order(module, c.rejected))
        cache.prune(base, {cache.manifest_path(base, key)} |
                    {cache.object_voucher(base, f) for f in c.kernels.values()})
    if failed:
        raise RuntimeError(failed)


def _load_cached(c: Compiled, base: Path, key: str) -> bool:
    """Load ``key``'s entry into ``c``; False if there is none or an object of it is
    missing or damaged (those already loaded stay: the build skips them)."""
    entry = cache.lookup(base, key)
    if entry is None:
        return False
    for fname in dict.fromkeys(entry.kernels.values()):
        so = cache.object_lookup(base, fname)
        if so is None:
            return False
        c.load(so, fname, [k for k, f in entry.kernels.items() if f == fname])
    for name, why in entry.rejected.items():
        c.reject([name], why)
    return True


def _compile(module, c: Compiled, tmp: Path, stop: threading.Event, base: Path,
             owner: Hashable = None) -> str:
    """Translate and compile the kernels of ``module`` not yet in ``c``, loading each as
    its compile ends; the compiler's message if it failed for some ("" if none).

    Kernels go largest first (their instruction count tracks their compile time, so the
    longest jobs do not start last), except that a kernel a launch wants goes next, on a
    slot of its own if every core is busy; each is handed to the compiler as soon as its C
    exists, so translation overlaps compilation.  A kernel whose object is already there
    (a twin in this module, or in the object cache) is not compiled."""
    queue = [name for name, _ in sorted(module.kernels.items(), key=lambda e: -_size(e[1]))
             if name not in c.kernels and name not in c.rejected]
    units: dict[str, tuple[str, str]] = {}
    waiting: dict[str, list[str]] = {}     # C function being compiled -> its kernels
    failures: list[str] = []

    def done(fname: str, status: int, message: str) -> None:
        if status:
            failures.append(message)
            c.reject(waiting.pop(fname), f"the C compiler failed: {message[-500:]}")
            return
        so = tmp / f"{fname}.so"
        cache.object_store(base, fname, so.read_bytes())
        c.compiled += 1
        c.load(so, fname, waiting.pop(fname))

    pre: list[Path | None] = []

    def prelude() -> Path | None:           # looked for when the first compile starts
        if not pre:
            pre.append(pch.include_dir(base, _salt(), _command, FLAGS, INCLUDES, stop))
        return pre[0]

    with Jobs(tmp, stop, owner=owner) as jobs:
        while queue:
            name, urgent = c.take(queue)
            try:
                fname, src = units.get(name) or _kernel_unit(module, module.kernels[name])
            except Unsupported as exc:
                c.reject([name], str(exc))
                continue
            units[name] = fname, src
            if c.has(fname):
                c.share(fname, [name])
            elif fname in waiting:
                waiting[fname].append(name)
            elif (so := cache.object_lookup(base, fname)) is not None:
                c.load(so, fname, [name])
            elif not _start(jobs, tmp, fname, src, done, urgent, lambda: c.wants_any(queue),
                            prelude()):
                queue.insert(0, name)           # a launch wants another first
            else:
                waiting[fname] = [name]
        jobs.wait()
    return "\n".join(failures)


INCLUDES = [f"-I{HERE}", f"-I{CSRC}"]


def _start(jobs: Jobs, tmp: Path, fname: str, src: str, done, urgent: bool, interrupt,
           pre: Path | None = None) -> bool:
    """Start compiling ``fname`` to ``tmp/fname.so`` (False if ``interrupt`` turned true
    while every slot was busy: nothing started); ``pre``: the directory of the precompiled
    prelude (:mod:`.pch`), searched first."""
    c_file = tmp / f"{fname}.c"
    c_file.write_text(src)
    first = [f"-I{pre}"] if pre is not None else []
    cmd = _command([*FLAGS, "-shared", *first, *INCLUDES, "-o", str(tmp / f"{fname}.so"),
                    str(c_file)])
    return jobs.start(cmd, done=lambda status, msg: done(fname, status, msg), urgent=urgent,
                      interrupt=None if urgent else interrupt)


def _in_order(module, table: dict[str, str]) -> dict[str, str]:
    return {name: table[name] for name in module.kernels if name in table}
