"""The test session's JIT cache, warmed once in the background (tests/conftest.py).

On a machine whose cache is cold (a new CI machine, ``GDEV_JIT_CACHE`` an empty
directory), every test that loads one of the repository's modules would otherwise start
its own background compile of it, in the pytest process or in each daemon it starts: the
same module compiled again and again by processes that end before their compile does,
competing with later tests for the cores.  Instead, :func:`start` compiles every module
the suite loads from a file (``kernels/``, ``tests/programs/ptx/``), once, in one
``python -m gdevd.tools.precompile`` at niceness 19 beside the tests, into the cache the
tests use.  A test that loads such a module before it is ready waits for nothing (tiered
execution serves it on the interpreter; its own compile waits for the precompiler's lock
of that key instead of compiling it twice; a test that forces the compiled engine waits
for that build, on the CPU it leaves idle), and every load after it is ready runs
compiled from the start.  Warm caches (a developer's) make the run a series of hits.

``GDEV_TEST_WARM_JIT=0`` turns it off (the suite then compiles as before).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_proc: subprocess.Popen | None = None


def modules() -> list[Path]:
    """The PTX files to compile, those the earliest tests load first: the repository's
    kernels (the CUDA layer, daemon and C client tests), then the programs' variants."""
    programs = sorted((ROOT / "tests" / "programs" / "ptx").glob("*.ptx"),
                      key=lambda p: (p.name.endswith(".debug.ptx"), p.name))
    return sorted((ROOT / "kernels").glob("*.ptx")) + programs


def start(log: Path) -> None:
    """Start compiling :func:`modules` in the background (output in ``log``); nothing
    without a C compiler, with ``GDEV_TEST_WARM_JIT=0`` or under ``GDEV_PTX_ENGINE=interp``."""
    global _proc
    from gdevd.gpu.ptx.jit import build
    if (build.compiler() is None or os.environ.get("GDEV_TEST_WARM_JIT", "1") == "0"
            or os.environ.get("GDEV_PTX_ENGINE") == "interp"):
        return
    # niceness 19, below the tests' own compiles (10) that a test waits for: the warm-up
    # takes only what they leave idle
    nice = [tool, "-n", "19"] if (tool := shutil.which("nice")) else []
    with open(log, "wb") as out:
        # compilers at the tool's own niceness (--nice 0: not changed)
        _proc = subprocess.Popen([*nice, sys.executable, "-m", "gdevd.tools.precompile",
                                  "--nice", "0", *map(str, modules())],
                                 stdin=subprocess.DEVNULL, stdout=out, stderr=out, cwd=ROOT)
    # reaped the moment it ends: a test that waits for "any child" must not get it
    threading.Thread(target=_proc.wait, name="jitwarm-reaper", daemon=True).start()


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """Stop the warm-up's processes (SIGSTOP) for the block, for a test that measures how
    quickly something answers on a quiet CPU; they continue after it.  The compilers'
    guards (``sh``, blocked reading their lifeline) are left running, so that the
    compilers still die with the warm-up if this process dies meanwhile."""
    stopped: list[int] = []
    try:
        if _proc is not None and _proc.poll() is None:
            _stop_tree(_proc.pid, stopped)
        yield
    finally:
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


def _stop_tree(pid: int, stopped: list[int]) -> None:
    """SIGSTOP ``pid`` and then, top down, its descendants but the guards (a stopped
    process starts no new child, so none is missed)."""
    try:
        if Path(f"/proc/{pid}/comm").read_text().strip() != "sh":
            os.kill(pid, signal.SIGSTOP)
            stopped.append(pid)
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except (OSError, ProcessLookupError):
        return                          # it ended meanwhile
    for task in tasks:
        try:
            kids = (task / "children").read_text().split()
        except OSError:
            continue
        for kid in kids:
            _stop_tree(int(kid), stopped)


def stop() -> None:
    """End the warm-up if it still runs (its compiler processes die with it)."""
    global _proc
    if _proc is not None:
        _proc.kill()
        _proc.wait()
        _proc = None
