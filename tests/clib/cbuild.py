"""Building the C libraries and test programs for tests/clib.

:func:`clib_dir` runs ``make clib`` once per build flavour (plain, or ASan/UBSan into its own
directory); :func:`compile_program` builds one C program against ``gdev.h`` and a library
directory, with the run path set so it runs without LD_LIBRARY_PATH.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CSRC = ROOT / "libgdev" / "csrc"
PROGS = Path(__file__).resolve().parent / "progs"
SANITIZE = "-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
CFLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-g", "-O1", f"-I{CSRC}"]


def need_cc() -> str:
    """The C compiler, or skip (CI has gcc; `make deps` installs it)."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler (apt-get install gcc)")
    return cc


@functools.cache
def clib_dir(sanitized: bool = False) -> Path:
    """Build the libraries with make (ASan/UBSan into build/clib-asan); their directory."""
    need_cc()
    out = ROOT / "build" / ("clib-asan" if sanitized else "clib")
    args = ["make", "-s", "clib", f"CLIB_DIR={out}"]
    if sanitized:
        args.append(f"CLIB_CFLAGS={SANITIZE}")
    subprocess.run(args, cwd=ROOT, check=True, capture_output=True)
    return out


def compile_program(src: Path | str, out: Path, libs: Path | None, *extra: str,
                    sanitized: bool = False) -> Path:
    """Compile C source ``src`` into ``out`` (linked with -lgdev from ``libs`` if given)."""
    cmd = [need_cc(), *CFLAGS, str(src), "-o", str(out), *extra]
    if sanitized:
        cmd[1:1] = SANITIZE.split()
    if libs is not None:
        cmd += [f"-L{libs}", "-lgdev", f"-Wl,-rpath,{libs}"]
    cmd.append("-pthread")
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return out


def sanitizer_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` plus sanitizer options that make any finding fail the program."""
    return {**env, "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0:exitcode=99",
            "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1:exitcode=99",
            "LSAN_OPTIONS": os.environ.get("LSAN_OPTIONS", "")}
