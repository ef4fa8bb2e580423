"""Compiling a module's kernels to a shared object, cached on disk by content hash.

The cache key hashes the PTX text, the translator's own sources (this package and the C
headers it includes), the compiler's version and the flags, so a module loaded again costs
one ``dlopen`` and a small manifest read.  Entries are written to a temporary name and
renamed, so concurrent daemons never see half a file.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import cffi

from .cgen import kernel_c
from .operands import Unsupported

log = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
CSRC = HERE.parent.parent / "csrc"
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


def cache_dir() -> Path:
    """Where compiled modules are kept: ``$GDEV_JIT_CACHE`` or ``~/.cache/gdev-py/jit``."""
    env = os.environ.get("GDEV_JIT_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "gdev-py" / "jit"


@functools.cache
def compiler() -> str | None:
    """The C compiler's path (``$CC`` or ``cc``), None if there is none."""
    return shutil.which(os.environ.get("CC", "cc"))


@functools.cache
def _compiler_version() -> str:
    cc = compiler() or "cc"
    out = subprocess.run([cc, "--version"], capture_output=True, text=True, check=False)
    return out.stdout.splitlines()[0] if out.stdout else cc or ""


@functools.cache
def _sources_digest() -> str:
    h = hashlib.blake2b(digest_size=16)
    for p in sorted(HERE.glob("*.py")) + sorted(HERE.glob("*.h")) + [
            CSRC / "mmu_internal.h", CSRC / "gdev_core.h"]:
        h.update(p.read_bytes())
    return h.hexdigest()


def cache_key(ptx: str) -> str:
    """Content hash naming a module's compiled form."""
    h = hashlib.blake2b(digest_size=20)
    for part in (ptx, _sources_digest(), _compiler_version(), " ".join(FLAGS)):
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


def _compile(sources: list[str], out: Path) -> None:
    """Compile each kernel's source on its own (in parallel, up to one process per core),
    link them into ``out``; RuntimeError with the compiler's message if any fails."""
    cc = compiler() or "cc"
    with tempfile.TemporaryDirectory(prefix="gdev-jit-") as tmp:
        objs: list[str] = []
        procs: list[subprocess.Popen] = []
        for k, src in enumerate(sources):
            c_file, obj = Path(tmp) / f"k{k}.c", Path(tmp) / f"k{k}.o"
            c_file.write_text(src)
            cmd = [cc, *FLAGS, "-c", f"-I{HERE}", f"-I{CSRC}", "-o", str(obj), str(c_file)]
            if len(procs) >= (os.cpu_count() or 1):
                _finish(procs.pop(0))
            procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.PIPE, text=True))
            objs.append(str(obj))
        for p in procs:
            _finish(p)
        so = Path(tmp) / "module.so"
        _finish(subprocess.Popen([cc, "-shared", "-o", str(so), *objs],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
        out.parent.mkdir(parents=True, exist_ok=True)
        part = out.with_suffix(f".{os.getpid()}.part")
        shutil.copyfile(so, part)
        os.replace(part, out)


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
    listed in ``rejected`` with the reason (they stay on the interpreter).
    """
    t0 = time.monotonic()
    key = cache_key(ptx)
    base = cache_dir() / key[:2] / key
    so, manifest = base.with_suffix(".so"), base.with_suffix(".json")
    cached = so.exists() and manifest.exists()
    if cached:
        meta = json.loads(manifest.read_text())
        kernels, rejected = meta["kernels"], meta["rejected"]
    else:
        sources, kernels, rejected = _translate(module)
        if kernels:
            _compile(sources, so)
        part = manifest.with_suffix(f".{os.getpid()}.part")
        manifest.parent.mkdir(parents=True, exist_ok=True)
        part.write_text(json.dumps({"kernels": kernels, "rejected": rejected}))
        os.replace(part, manifest)
    ffi, lib = _load(so, kernels) if kernels else (cffi.FFI(), None)
    return Compiled(lib, ffi, kernels, rejected, time.monotonic() - t0, cached)
