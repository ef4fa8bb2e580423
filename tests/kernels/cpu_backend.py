"""Compile a kernels/*.cu file for the host against cpu_cuda/cuda_shim.h and load it.

For every ``extern "C" __global__`` kernel the build appends two C functions: a wrapper that
unpacks a parameter buffer (laid out by the C ABI, which is also PTX's .param layout) and calls
the kernel, and a layout function reporting each parameter's offset and size. Libraries are
cached in build/cpu-cuda/ by a hash of the source and the shim. Needs g++ (``make deps``).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import subprocess
from functools import cache
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHIM = HERE / "cpu_cuda" / "cuda_shim.h"
CACHE = HERE.parents[1] / "build" / "cpu-cuda"
CXX = ["g++", "-std=c++17", "-O1", "-fPIC", "-shared", "-ffp-contract=off", "-fwrapv", "-w"]

_KERNEL = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(([^)]*)\)', re.S)
_EXTERN_SHARED = re.compile(r"extern\s+__shared__\s+([\w\s]+?)\s+(\w+)\s*\[\s*\]\s*;")
_SHIM_ERRORS = {-1: "out of memory", -2: "deadlock at a barrier", -3: "bad block shape"}


def kernel_signatures(source: str) -> dict[str, list[tuple[str, str]]]:
    """Map each extern "C" kernel in ``source`` to its [(type, name)] parameters."""
    out = {}
    for name, params in _KERNEL.findall(source):
        decls = [p.strip() for p in params.split(",") if p.strip()]
        out[name] = [(d[: m.start()].strip(), m.group(1))
                     for d in decls for m in [re.search(r"(\w+)\s*$", d)]]
    return out


def _glue(sigs: dict[str, list[tuple[str, str]]]) -> str:
    lines = []
    for kname, params in sigs.items():
        lines.append(f'extern "C" void shim_wrap_{kname}(const char *buf) {{')
        lines.append("    size_t off = 0;")
        for i, (typ, _) in enumerate(params):
            lines.append(f"    off = (off + alignof({typ}) - 1) / alignof({typ}) * alignof({typ});")
            lines.append(f"    {typ} p{i}; memcpy((void *)&p{i}, buf + off, sizeof(p{i}));")
            lines.append(f"    off += sizeof({typ});")
        lines.append(f"    {kname}({', '.join(f'p{i}' for i in range(len(params)))});")
        lines.append("}")
        lines.append(f'extern "C" int shim_layout_{kname}(size_t *offs, size_t *sizes) {{')
        lines.append("    size_t off = 0;")
        for i, (typ, _) in enumerate(params):
            lines.append(f"    off = (off + alignof({typ}) - 1) / alignof({typ}) * alignof({typ});")
            lines.append(f"    offs[{i}] = off; sizes[{i}] = sizeof({typ}); off += sizeof({typ});")
        lines.append(f"    return {len(params)};")
        lines.append("}")
    return "\n".join(lines) + "\n"


def translate(source: str) -> str:
    """Return host C++ for a kernel file: the shim included, dynamic shared memory rebound."""
    body = _EXTERN_SHARED.sub(r"\1 *\2 = (\1 *)shim_dyn_smem;", source)
    return f'#include "{SHIM.name}"\n#line 1\n{body}\n{_glue(kernel_signatures(source))}'


class CpuModule:
    """One compiled kernel file: parameter layouts and launches by kernel name."""

    def __init__(self, lib: ctypes.CDLL, sigs: dict) -> None:
        self._lib = lib
        self._sigs = sigs
        lib.shim_launch.restype = ctypes.c_int
        lib.shim_launch.argtypes = [ctypes.c_void_p, ctypes.c_char_p] + [ctypes.c_uint] * 7

    def layout(self, kernel: str) -> list[tuple[int, int]]:
        """[(offset, size)] of ``kernel``'s parameters; KeyError for an unknown kernel."""
        n = len(self._sigs[kernel])
        offs, sizes = (ctypes.c_size_t * max(n, 1))(), (ctypes.c_size_t * max(n, 1))()
        getattr(self._lib, f"shim_layout_{kernel}")(offs, sizes)
        return [(offs[i], sizes[i]) for i in range(n)]

    def launch(self, kernel: str, grid, block, params: bytes, shared_dynamic: int) -> None:
        """Run ``kernel`` to completion; RuntimeError on deadlock or a bad shape."""
        wrap = ctypes.cast(getattr(self._lib, f"shim_wrap_{kernel}"), ctypes.c_void_p)
        rc = self._lib.shim_launch(wrap, params, *grid, *block, shared_dynamic)
        if rc:
            raise RuntimeError(f"{kernel}: {_SHIM_ERRORS.get(rc, rc)}")


@cache
def load_cpu_module(cu_path: Path) -> CpuModule:
    """Compile (or reuse the cached build of) ``cu_path`` and load it."""
    source = cu_path.read_text()
    cxx = translate(source)
    key = hashlib.sha256((cxx + SHIM.read_text() + " ".join(CXX)).encode()).hexdigest()[:16]
    CACHE.mkdir(parents=True, exist_ok=True)
    so = CACHE / f"{cu_path.stem}-{key}.so"
    if not so.exists():
        src = CACHE / f"{cu_path.stem}-{key}.{os.getpid()}.cc"
        src.write_text(cxx)
        tmp = so.with_suffix(f".{os.getpid()}.tmp.so")  # concurrent builds rename atomically
        subprocess.run([*CXX, f"-I{SHIM.parent}", "-o", str(tmp), str(src)], check=True)
        tmp.rename(so)
    return CpuModule(ctypes.CDLL(str(so)), kernel_signatures(source))
