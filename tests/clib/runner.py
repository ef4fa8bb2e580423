"""Kernel tests through the C libraries: a device backend (the interface of
tests/kernels/harness.py) that drives a C runner program over a pipe.

``drv``: progs/drv_runner.c built with gcc against cuda.h, linked with gdev-py's libcuda.so.1.
``rt``: progs/rt_runner.cu.in filled with every kernels/*.cu and built by nvcc
``-cudart shared``, run with gdev-py's libcudart.so.13.  Arguments go to the runner one
buffer per parameter, sized by the PTX's declared layout (gdevd's loader, the reference); the
libraries pack them by their own reading of the module.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
from functools import cache
from pathlib import Path

import pytest

from tests.clib.cbuild import CFLAGS, PROGS, ROOT, clib_dir, compile_program, sanitizer_env
from tests.kernels.cpu_backend import kernel_signatures
from tests.kernels.harness import KERNELS, _Device, _dim3, _encode

CUDA_HOME = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda"))
BUILD = ROOT / "build" / "clib-tests"
# Which CUDA runtime nvcc links into the test programs unless a test says: gdev-py's
# libcudart.so.13 ("shared", the default) or NVIDIA's own static one over gdev-py's
# libcuda.so.1 ("static", nvcc's default; GDEV_TEST_CUDART=static tries every program so).
CUDART = os.environ.get("GDEV_TEST_CUDART", "shared")


def need_cuda_h() -> None:
    """Skip where the CUDA toolkit's headers are absent (libcuda.so.1 is not built there)."""
    if not (CUDA_HOME / "include" / "cuda.h").exists():
        pytest.skip(f"no {CUDA_HOME}/include/cuda.h: libcuda.so.1 is not built without it")


def nvcc() -> str:
    """The nvcc to build runtime-API programs with, or skip."""
    path = shutil.which("nvcc") or str(CUDA_HOME / "bin" / "nvcc")
    if not os.access(path, os.X_OK):
        pytest.skip("nvcc is not installed: runtime-API programs cannot be built")
    return path


def build_cuda(src: Path, out: Path, arch: str = "compute_75", driver: bool = False,
               flags: tuple[str, ...] = (), cudart: str = CUDART) -> Path:
    """``src`` built by nvcc ``-cudart <cudart>`` (and ``flags``) into ``out``, with PTX only
    (for ``arch``), as a program gdevd runs, linked with libcuda.so.1 too if ``driver``;
    skips without the CUDA toolkit."""
    need_cuda_h()
    libs = clib_dir()
    link = [f"-L{libs}", "-lcuda"] if driver else []
    subprocess.run([nvcc(), "-cudart", cudart, *flags, "-gencode", f"arch={arch},code={arch}",
                    "-o", str(out), str(src), *link], check=True, capture_output=True)
    return out


def build_rt_program(name: str, out_dir: Path) -> Path:
    """progs/<name>.cu built by nvcc ``-cudart shared`` (PTX for sm_75) into out_dir."""
    return build_cuda(PROGS / f"{name}.cu", out_dir / name)


def gdev_run(mount: str, prog: Path, env: dict[str, str] | None = None) -> str:
    """Run ``prog`` on the daemon mounted at ``mount`` by scripts/gdev-run; its stdout (the
    run must succeed)."""
    res = subprocess.run([str(ROOT / "scripts" / "gdev-run"), "--mount", mount, str(prog)],
                         env=env, capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def asan_env() -> dict[str, str]:
    """The environment that runs an (uninstrumented) nvcc program on the ASan/UBSan build of
    the libraries, the sanitizer runtimes preloaded."""
    preload = " ".join(subprocess.run(["gcc", f"-print-file-name={lib}"], capture_output=True,
                                      text=True, check=True).stdout.strip()
                       for lib in ("libasan.so", "libubsan.so"))
    return sanitizer_env({**os.environ, "GDEV_CLIB_DIR": str(clib_dir(sanitized=True)),
                          "LD_PRELOAD": preload})


@cache
def drv_runner() -> Path:
    """progs/drv_runner.c built against libcuda.so.1."""
    need_cuda_h()
    BUILD.mkdir(parents=True, exist_ok=True)
    libs = clib_dir()
    return compile_program(PROGS / "drv_runner.c", BUILD / "drv_runner", None,
                           f"-I{CUDA_HOME / 'include'}", f"-L{libs}", "-lcuda",
                           f"-Wl,-rpath,{libs}")


def _rt_source() -> str:
    includes, table = [], []
    for cu in sorted(KERNELS.glob("*.cu")):
        names = list(kernel_signatures(cu.read_text()))
        includes += [f"#define {k} {cu.stem}__{k}" for k in names]
        includes.append(f'#include "{cu}"')
        includes += [f"#undef {k}" for k in names]
        table += [f'{{"{cu.stem}:{k}", (const void *){cu.stem}__{k}}}' for k in names]
    text = (PROGS / "rt_runner.cu.in").read_text()
    return text.replace("@INCLUDES@", "\n".join(includes)).replace(
        "@KERNEL_TABLE@", ",\n    ".join(table))


@cache
def rt_runner(cudart: str = CUDART) -> Path:
    """The runtime-API runner on runtime ``cudart`` ("shared": gdev-py's, "static": NVIDIA's),
    rebuilt when a kernel or the template changes."""
    need_cuda_h()
    clib_dir()
    src = _rt_source()
    digest = hashlib.sha256((cudart + src + (PROGS / "runner_common.h").read_text()).encode())
    out = BUILD / f"rt_runner-{digest.hexdigest()[:12]}"
    if not out.exists():
        BUILD.mkdir(parents=True, exist_ok=True)
        cu = out.with_suffix(".cu")
        cu.write_text(src)
        res = subprocess.run([nvcc(), "-cudart", cudart, "-gencode",
                              "arch=compute_75,code=compute_75", f"-I{PROGS}", "-o", str(out),
                              str(cu)], capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
    return out


@cache
def _layouts(file: str) -> dict[str, list[int]]:
    from gdevd.gpu.ptx import load_module

    mod = load_module((KERNELS / f"{file}.ptx").read_text(), file)
    return {name: [p.size for p in info.params] for name, info in mod.kernels.items()}


class RunnerDevice(_Device):
    """A C runner process with one CUDA context on the daemon at ``mount``: ``kind`` "drv"
    (the driver API), "rt" (the runtime API) or "rt-static" (NVIDIA's static runtime)."""

    def __init__(self, kind: str, mount: str) -> None:
        exe, argv = ((drv_runner(), [str(KERNELS)]) if kind == "drv" else
                     (rt_runner("static"), []) if kind == "rt-static" else (rt_runner(), []))
        env = {**os.environ, "GDEV_MOUNT": mount, "LD_LIBRARY_PATH": str(clib_dir())}
        self.proc = subprocess.Popen([str(exe), *argv], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env)

    def close(self) -> None:
        """End the runner (its context goes with it)."""
        self.proc.stdin.close()
        assert self.proc.wait(60) == 0

    def _call(self, msg: bytes, extra: int = 0) -> bytes:
        self.proc.stdin.write(msg)
        self.proc.stdin.flush()
        (status,) = struct.unpack("<i", self.proc.stdout.read(4))
        if status:
            raise RuntimeError(f"runner status {status}")
        return self.proc.stdout.read(extra) if extra else b""

    def alloc(self, nbytes: int) -> int:
        return struct.unpack("<Q", self._call(b"A" + struct.pack("<Q", nbytes), 8))[0]

    def write(self, ptr: int, data: bytes) -> None:
        self._call(b"W" + struct.pack("<QQ", ptr, len(data)) + bytes(data))

    def read(self, ptr: int, n: int) -> bytes:
        return self._call(b"R" + struct.pack("<QQ", ptr, n), n)

    def launch(self, file: str, kernel: str, grid, block, args, shared_dynamic: int = 0):
        sizes = _layouts(file)[kernel]
        if len(args) != len(sizes):
            raise TypeError(f"{kernel} takes {len(sizes)} arguments, got {len(args)}")
        name = f"{file}:{kernel}".encode()
        msg = [b"L", struct.pack("<I", len(name)), name,
               struct.pack("<3I3III", *_dim3(grid), *_dim3(block), shared_dynamic, len(args))]
        for arg, size in zip(args, sizes, strict=True):
            msg += [struct.pack("<I", size), _encode(arg, size)]
        self._call(b"".join(msg))


__all__ = ["CFLAGS", "RunnerDevice", "drv_runner", "nvcc", "rt_runner"]
