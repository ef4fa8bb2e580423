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

from tests.clib.cbuild import clib_dir, sanitizer_env
from tests.clib.runner import asan_env, build_rt_program, gdev_run
from tests.clib.test_libcuda import build, run


@pytest.fixture(scope="module")
def progs(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("drvapi")


@pytest.mark.parametrize("name", ["drv_memory2d", "drv_pointers", "drv_streamops", "drv_library"])
@pytest.mark.parametrize("sanitized", [False, True])
def test_driver_program(gdevd, progs, name: str, sanitized: bool) -> None:
    env = sanitizer_env(gdevd.env()) if sanitized else gdevd.env()
    res = run(build(name, progs, sanitized=sanitized), env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"{name} ok" in res.stdout


def exported() -> dict[str, str]:
    """Each exported cu* entry point's base name -> its newest versioned symbol."""
    out = subprocess.run(["nm", "-D", "--defined-only", str(clib_dir() / "libcuda.so.1")],
                         check=True, capture_output=True, text=True).stdout
    newest: dict[str, tuple[int, str]] = {}
    for sym in re.findall(r" T (cu\w+)$", out, re.M):
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


RT_EXPECTED = ("library kernels=2 r=13 size=4 threads=1024 missing=cudaErrorSymbolNotFound\n"
               "runtime flags=1 registered=1 again=cudaErrorHostMemoryAlreadyRegistered "
               "unregistered=0\n"
               "managed read_mostly=1 preferred=-2\n")


@pytest.fixture(scope="module")
def rt_library(progs) -> Path:
    return build_rt_program("rt_library", progs)


@pytest.mark.parametrize("sanitized", [False, True])
def test_runtime_libraries_and_driver_backed_calls(gdevd, rt_library, sanitized: bool) -> None:
    """cudaLibrary* over libcuda's cuLibrary*, and runtime calls that are the driver's now."""
    assert gdev_run(gdevd.mount, rt_library, asan_env() if sanitized else None) == RT_EXPECTED
