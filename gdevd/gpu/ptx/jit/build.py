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
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import cffi

from . import cache
from .cgen import kernel_c, relative
from .jobs import Jobs
from .operands import Unsupported

log = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
CSRC = HERE.parent.parent / "csrc"
NICE_MAX = 19
_nice = 10          # niceness of the compiler processes (0 = as the daemon)
FLAGS = ["-O2", "-march=native", "-ffp-contract=off", "-fno-strict-aliasing", "-fPIC",
         "-fvisibility=default", "-w"]
# prelude.h's structures (jctx is allocated here, so its size must match: TLB_SIZE = 1024)
CDEF = """
struct jtlb {
    uint64_t tag[1024];
    uint8_t *base[1024];
    uint8_t acc[1024];
};
struct jctx {
    void *mmu;
    uint8_t *params, *shared, *local, *pvars, *regs, *cc;
    uint64_t *xa;
    uint8_t *xb;
    int32_t *pc, *act, *tid_x, *tid_y, *tid_z, *iota;
    uint64_t param_size, shared_size, local_size, lo_stride, pv_stride, reg_stride;
    uint64_t data_base, block, block_end, block_step, instructions, thread_instructions, fault_va;
    int64_t left;
    uint32_t ntid[3], nctaid[3], ctaid[3];
    int32_t nt, upc, nlive, nact, act_ok, started, fault_line, fault_kind;
    int32_t status, pcw;
    uint32_t divsteps, dyn_shared;
    uint64_t grid_ws;
    int64_t quantum, reserve;
    struct jtlb *tlb;
    struct jtlb tlb_own;
    const void *tex;
    uint64_t ntex;
};
"""


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
            CSRC / "mmu_internal.h", CSRC / "gdev_core.h"]:
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


@dataclass
class Compiled:
    """A loaded shared object: C function name per compiled kernel, and why others are not."""

    lib: object
    ffi: cffi.FFI
    kernels: dict[str, str]
    rejected: dict[str, str]
    seconds: float
    cached: bool
    pool: dict = field(default_factory=dict)   # idle launch state per kernel and shape
    compiled: int = 0    # kernels the C compiler ran for (the others: shared or cached objects)


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


def _translate_and_compile(module, tmp: Path, stop: threading.Event, base: Path
                           ) -> tuple[Path | None, dict, dict, int]:
    """(shared object in ``tmp`` or None if no kernel translates, C name per compiled
    kernel, reason per rejected one, kernels compiled).  Kernels are translated largest
    first and each is handed to the compiler as soon as its C exists, so translation
    overlaps compilation and the longest jobs do not start last; a kernel whose object is
    already there (a duplicate in this module, or in the object cache) is not compiled."""
    kernels, rejected, fresh = {}, {}, []
    objs: dict[str, Path | None] = {}
    order = sorted(module.kernels.items(), key=lambda e: -_size(e[1]))
    with Jobs(tmp, stop) as jobs:
        for name, info in order:
            try:
                fname, src = _kernel_unit(module, info)
            except Unsupported as exc:
                rejected[name] = str(exc)
                continue
            kernels[name] = fname
            if fname in objs:
                continue
            objs[fname] = cache.object_lookup(base, fname)
            if objs[fname] is None:
                c_file, obj = tmp / f"{fname}.c", tmp / f"{fname}.o"
                c_file.write_text(src)
                fresh.append(fname)
                objs[fname] = obj
                jobs.start(_command([*FLAGS, "-c", f"-I{HERE}", f"-I{CSRC}", "-o", str(obj),
                                     str(c_file)]))
        jobs.wait()
        for fname in fresh:
            cache.object_store(base, fname, (tmp / f"{fname}.o").read_bytes())
        if not objs:
            return None, {}, _in_order(module, rejected), 0
        so = tmp / "module.so"
        jobs.start(_command(["-shared", "-o", str(so), *map(str, objs.values())]))
        jobs.wait()
    return so, _in_order(module, kernels), _in_order(module, rejected), len(fresh)


def _in_order(module, table: dict[str, str]) -> dict[str, str]:
    return {name: table[name] for name in module.kernels if name in table}


def _load(so: Path, kernels: dict[str, str]):
    ffi = cffi.FFI()
    ffi.cdef(CDEF + "".join(f"void {f}_run(struct jctx **, int, int64_t);\n"
                            for f in sorted(set(kernels.values()))))
    return ffi, ffi.dlopen(str(so))


def build(module, ptx: str, cancelled: threading.Event | None = None) -> Compiled:
    """The compiled form of ``module`` (whose source text is ``ptx``), from the cache or cc.

    Raises RuntimeError if the compiler fails, :class:`~.jobs.Cancelled` once ``cancelled``
    is set (its compiler processes are killed); kernels the translator cannot handle are
    listed in ``rejected`` with the reason (they stay on the interpreter).  A damaged cache
    entry is compiled again and replaced.  One process compiles a key at a time
    (:func:`.cache.building`): another that wants it meanwhile waits and loads its entry.
    """
    t0 = time.monotonic()
    stop = cancelled or threading.Event()
    key, base = cache_key(ptx), cache.root()
    entry = cache.lookup(base, key)
    cached, compiled = entry is not None, 0
    if entry is None:
        with cache.building(base, key, stop.is_set):
            entry = cache.lookup(base, key)     # built by the holder we waited for
            cached = entry is not None
            if entry is None:
                with tempfile.TemporaryDirectory(prefix="gdev-jit-") as tmp:
                    built, kernels, rejected, compiled = _translate_and_compile(
                        module, Path(tmp), stop, base)
                    entry = cache.store(base, key, built, kernels, rejected)
                    cache.prune(base, {cache.paths(base, key)[1]} |
                                {cache.object_voucher(base, f) for f in kernels.values()})
    ffi, lib = _load(entry.so, entry.kernels) if entry.kernels else (cffi.FFI(), None)
    return Compiled(lib, ffi, entry.kernels, entry.rejected, time.monotonic() - t0, cached,
                    compiled=compiled)
