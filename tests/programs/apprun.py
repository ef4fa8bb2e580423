"""Running an nvcc-built application on a mounted gdevd under one engine policy
(/proc/gdev/ptx_engine), and reading which modules ran compiled (/proc/gdev/ptx_modules)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from tests.clib.cbuild import ROOT
from tests.daemon.conftest import read_text, write_once


def run_on_engine(gdevd, prog: Path, engine: str) -> subprocess.CompletedProcess:
    """``prog`` run by scripts/gdev-run with the daemon's engine policy ``engine`` (``auto``
    again afterwards); the finished process, its output as text."""
    write_once(gdevd.proc_path("ptx_engine"), engine.encode())
    try:
        return subprocess.run([str(ROOT / "scripts" / "gdev-run"), "--mount", gdevd.mount,
                               str(prog)], capture_output=True, text=True, timeout=600)
    finally:
        write_once(gdevd.proc_path("ptx_engine"), b"auto")


SETTLE_S = 600.0     # a bound on the builds still running when a program ends


def module_rows(gdevd) -> list[list[str]]:
    """The rows of /proc/gdev/ptx_modules, split into fields (no header), once no module is
    still ``compiling``: each kernel runs compiled as soon as its own compile ends, so a
    program can finish before its module's build has (the kernels it never launched, or
    the build's last steps)."""
    end = time.monotonic() + SETTLE_S
    while True:
        rows = [r.split() for r in read_text(gdevd.proc_path("ptx_modules")).splitlines()[1:]]
        if time.monotonic() > end or not any(r[2] == "compiling" for r in rows):
            return rows
        time.sleep(0.05)
