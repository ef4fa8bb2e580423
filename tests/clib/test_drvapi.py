"""The driver API beyond launches (issue #12): memory and copies, pointer attributes,
registered memory and pools, streams' host functions and memory operations, context and
device queries, context-independent libraries -- C programs of progs/drv_*.c linked with
libcuda.so.1 against a mounted gdevd, plain and under ASan/UBSan; and cuGetProcAddress
finding every exported entry point."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.clib.cbuild import PROGS, ROOT, clib_dir, compile_program, sanitizer_env
from tests.clib.runner import CUDA_HOME, asan_env, build_rt_program, gdev_run, need_cuda_h
from tests.clib.test_libcuda import build, run


@pytest.fixture(scope="module")
def progs(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("drvapi")


@pytest.mark.parametrize("name", ["drv_memory2d", "drv_pointers", "drv_streamops", "drv_library",
                                  "drv_mipmap"])
@pytest.mark.parametrize("sanitized", [False, True])
def test_driver_program(gdevd, progs, name: str, sanitized: bool) -> None:
    env = sanitizer_env(gdevd.env()) if sanitized else gdevd.env()
    res = run(build(name, progs, sanitized=sanitized), env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"{name} ok" in res.stdout


@pytest.mark.parametrize("name", ["drv_memory2d", "drv_streamops"])
def test_per_thread_default_stream(gdevd, progs, name: str) -> None:
    """Built with CUDA_API_PER_THREAD_DEFAULT_STREAM, a program calls the _ptds/_ptsz names."""
    libs = clib_dir()
    exe = compile_program(PROGS / f"{name}.c", progs / f"{name}-ptds", None,
                          f"-I{CUDA_HOME / 'include'}", f"-L{libs}", "-lcuda",
                          f"-Wl,-rpath,{libs}", "-Wno-deprecated-declarations",
                          "-DCUDA_API_PER_THREAD_DEFAULT_STREAM=1")
    symbols = subprocess.run(["nm", "-D", "--undefined-only", str(exe)], check=True,
                             capture_output=True, text=True).stdout
    assert "cuMemcpyHtoD_v2_ptds" in symbols or "cuStreamWaitValue32_v2_ptsz" in symbols
    res = run(exe, env=gdevd.env())
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"{name} ok" in res.stdout


def exported() -> dict[str, str]:
    """Each exported cu* entry point's base name -> its newest versioned symbol."""
    out = subprocess.run(["nm", "-D", "--defined-only", str(clib_dir() / "libcuda.so.1")],
                         check=True, capture_output=True, text=True).stdout
    newest: dict[str, tuple[int, str]] = {}
    for sym in re.findall(r" T (cu\w+)$", out, re.M):
        if sym.endswith(("_ptds", "_ptsz")):
            continue  # the per-thread default-stream names: test_per_thread_default_stream
        m = re.fullmatch(r"(\w+?)(?:_v(\d+))?", sym)
        assert m
        base, ver = m.group(1), int(m.group(2) or 1)
        if base not in newest or ver > newest[base][0]:
            newest[base] = (ver, sym)
    return {base: sym for base, (_, sym) in newest.items()}


def test_get_proc_address_finds_every_entry_point(progs) -> None:
    names = exported()
    assert len(names) > 150
    args = [x for base, sym in sorted(names.items()) for x in (base, sym)]
    res = run(build("drv_proc_all", progs), *args, env={"PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout == f"proc_all ok {len(names)}\n"


RT_EXPECTED = ("library kernels=2 r=13 size=4 threads=1024 missing=cudaErrorSymbolNotFound "
               "unified=cudaErrorSymbolNotFound,(nil)\n"
               "runtime flags=1 id=1 device=0 registered=1 "
               "again=cudaErrorHostMemoryAlreadyRegistered unregistered=0\n"
               "managed read_mostly=1 preferred=-2\n"
               "props uuid=GDEV,1 pools=1 register=1 pitch_align=32\n")


@pytest.fixture(scope="module")
def rt_library(progs) -> Path:
    return build_rt_program("rt_library", progs)


@pytest.mark.parametrize("sanitized", [False, True])
def test_runtime_libraries_and_driver_backed_calls(gdevd, rt_library, sanitized: bool) -> None:
    """cudaLibrary* over libcuda's cuLibrary*, and runtime calls that are the driver's now."""
    assert gdev_run(gdevd.mount, rt_library, asan_env() if sanitized else None) == RT_EXPECTED


def test_get_proc_address_versions_are_cudas() -> None:
    """Each row of proc.c's table (a base name and the first CUDA version of that form) is a
    form NVIDIA's cudaTypedefs.h declares (PFN_<name>_v<version>), so a caller asking for a
    version gets the prototype it was built for."""
    need_cuda_h()
    inc = CUDA_HOME / "include"
    typedefs = "".join((inc / h).read_text() for h in ("cudaTypedefs.h",
                                                       "cudaProfilerTypedefs.h"))
    forms = set(re.findall(r"PFN_(cu\w+?)_v(\d+)\)", typedefs))
    table = (ROOT / "libgdev" / "csrc" / "cuda" / "proc.c").read_text()
    rows = (re.findall(r"P\((cu\w+), (\d+)\)", table)
            + re.findall(r'\{"(cu\w+)", (\d+),', table))
    assert len(rows) > 150
    assert [row for row in rows if row not in forms] == []
