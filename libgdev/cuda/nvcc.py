"""CUDA C++ sources for cuModuleLoad: compiled to PTX with nvcc, cached by content.

Like PyCUDA's SourceModule: ``cuModuleLoad("kernel.cu")`` runs ``nvcc -ptx`` once per
distinct source text and compiler and keeps the PTX under ``$XDG_CACHE_HOME/gdev/ptx``
(``~/.cache/gdev/ptx``), named by the SHA-256 of the source, the flags and nvcc's version
line.  Headers the source includes are not part of the key: touch the source to rebuild.
Without nvcc the error says how to produce the PTX by hand.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from .errors import CUresult, fail

FLAGS = ("-ptx", "-arch=compute_75", "-O3")  # what `make kernels` uses (kernels/README.md)
SOURCE_SUFFIXES = (".cu",)


def cache_dir() -> Path:
    """Where compiled PTX is kept."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gdev" / "ptx"


def _nvcc() -> str:
    nvcc = os.environ.get("NVCC") or shutil.which("nvcc")
    if nvcc is None:
        raise fail(CUresult.CUDA_ERROR_INVALID_SOURCE,
                   "this is CUDA C++ source and nvcc is not installed: install the CUDA "
                   f"toolkit, or run `nvcc {' '.join(FLAGS)} FILE.cu -o FILE.ptx` where it "
                   "is and load the .ptx")
    return nvcc


def _version(nvcc: str) -> str:
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        raise fail(CUresult.CUDA_ERROR_INVALID_SOURCE, f"{nvcc} does not run: {exc}") from None
    return out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""


def compile_source(path: str, source: bytes) -> bytes:
    """The PTX of the CUDA C++ file ``path`` (whose text is ``source``), from the cache or
    compiled now; CUDA_ERROR_INVALID_SOURCE with nvcc's messages if it does not compile."""
    nvcc = _nvcc()
    key = hashlib.sha256(b"\0".join([source, " ".join(FLAGS).encode(),
                                     _version(nvcc).encode()])).hexdigest()
    cached = cache_dir() / f"{key}.ptx"
    if cached.exists():
        return cached.read_bytes()
    with tempfile.TemporaryDirectory(prefix="gdev-nvcc-") as tmp:
        out = os.path.join(tmp, "out.ptx")
        try:
            r = subprocess.run([nvcc, *FLAGS, os.path.abspath(path), "-o", out],
                               capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.SubprocessError) as exc:
            raise fail(CUresult.CUDA_ERROR_INVALID_SOURCE, f"nvcc failed: {exc}") from None
        if r.returncode:
            raise fail(CUresult.CUDA_ERROR_INVALID_SOURCE,
                       f"nvcc could not compile {path}:\n{r.stderr.strip()[-2000:]}")
        ptx = Path(out).read_bytes()
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_suffix(f".{os.getpid()}.tmp")
    partial.write_bytes(ptx)
    partial.replace(cached)  # atomic: a concurrent loader sees all of it or nothing
    return ptx
