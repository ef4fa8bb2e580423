"""Compiling a module's kernels to a shared object, cached on disk by content hash.

The cache key hashes the PTX text, the translator's own sources (this package and the C
headers it includes), the compiler's version, the flags and the target that
``-march=native`` resolves to on this CPU (a cache shared between machines must not hand
one machine code with instructions its CPU lacks), so a module loaded again costs one
``dlopen`` and a small manifest read.  :mod:`.cache` keeps the entries whole and refuses a
cache directory others could write to.

The compiler runs at a lower priority (``nice``, :func:`set_nice`), one process per core,
the largest translation units first, so that tiered compilation in the background takes
idle cycles from running kernels, not their time.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import cffi

from . import cache
from .cgen import kernel_c
from .operands import Unsupported

log = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
CSRC = HERE.parent.parent / "csrc"
NICE_MAX = 19
_nice = 10          # niceness of the compiler processes (0 = as the daemon)
FLAGS = ["-O2", "-march=native", "-ffp-contract=off", "-fno-strict-aliasing", "-fPIC",
         "-fvisibility=default", "-w"]
CDEF = """
struct jtlb {
    uint64_t tag[256];
    uint8_t *base[256];
    uint8_t acc[256];
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
    int32_t status;
    uint32_t divsteps, dyn_shared;
    struct jtlb *tlb;
    struct jtlb tlb_own;
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


def cache_key(ptx: str) -> str:
    """Content hash naming a module's compiled form (on this compiler and this CPU)."""
    h = hashlib.blake2b(digest_size=20)
    cc = compiler() or "cc"
    march = next(f for f in FLAGS if f.startswith("-march="))
    for part in (ptx, _sources_digest(), _compiler_version(cc), " ".join(FLAGS),
                 _target(cc, march)):
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


def _translate(module) -> tuple[list[str], dict[str, str], dict[str, str]]:
    """(C source of each translated kernel, C name per kernel, reason per rejected one)."""
    parts = []
    kernels, rejected = {}, {}
    for k, (name, info) in enumerate(module.kernels.items()):
        fname = f"k{k}"
        try:
            parts.append('#include "prelude.h"\n' + kernel_c(module, info, fname))
            kernels[name] = fname
        except Unsupported as exc:
            rejected[name] = str(exc)
    return parts, kernels, rejected


def _command(cmd: list[str]) -> list[str]:
    """``cmd`` run through ``nice`` at the configured niceness (as is without ``nice``)."""
    tool = shutil.which("nice") if _nice else None
    return [tool, "-n", str(_nice), *cmd] if tool else cmd


def _compile(sources: list[str], tmp: Path) -> Path:
    """Compile each kernel's source on its own (in parallel, up to one process per core,
    the largest first so the longest jobs do not start last), link them into a shared
    object in ``tmp`` and return its path; RuntimeError with the compiler's message if any
    compilation fails."""
    cc = compiler() or "cc"
    objs = [str(tmp / f"k{k}.o") for k in range(len(sources))]
    procs: list[subprocess.Popen] = []
    for k in sorted(range(len(sources)), key=lambda k: -len(sources[k])):
        c_file = tmp / f"k{k}.c"
        c_file.write_text(sources[k])
        if len(procs) >= (os.cpu_count() or 1):
            _finish(procs.pop(0))
        cmd = [cc, *FLAGS, "-c", f"-I{HERE}", f"-I{CSRC}", "-o", objs[k], str(c_file)]
        procs.append(_spawn(cmd))
    for p in procs:
        _finish(p)
    so = tmp / "module.so"
    _finish(_spawn([cc, "-shared", "-o", str(so), *objs]))
    return so


def _spawn(cmd: list[str]) -> subprocess.Popen:
    return subprocess.Popen(_command(cmd), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen) -> None:
    _, err = proc.communicate()
    if proc.returncode:
        raise RuntimeError(f"cc failed: {err[-2000:]}")


def _load(so: Path, kernels: dict[str, str]):
    ffi = cffi.FFI()
    ffi.cdef(CDEF + "".join(f"void {f}_run(struct jctx **, int, int64_t);\n"
                            for f in kernels.values()))
    return ffi, ffi.dlopen(str(so))


def build(module, ptx: str) -> Compiled:
    """The compiled form of ``module`` (whose source text is ``ptx``), from the cache or cc.

    Raises RuntimeError if the compiler fails; kernels the translator cannot handle are
    listed in ``rejected`` with the reason (they stay on the interpreter).  A damaged cache
    entry is compiled again and replaced.
    """
    t0 = time.monotonic()
    key, base = cache_key(ptx), cache.root()
    entry = cache.lookup(base, key)
    cached = entry is not None
    if entry is None:
        sources, kernels, rejected = _translate(module)
        with tempfile.TemporaryDirectory(prefix="gdev-jit-") as tmp:
            built = _compile(sources, Path(tmp)) if kernels else None
            entry = cache.store(base, key, built, kernels, rejected)
    ffi, lib = _load(entry.so, entry.kernels) if entry.kernels else (cffi.FFI(), None)
    return Compiled(lib, ffi, entry.kernels, entry.rejected, time.monotonic() - t0, cached)
