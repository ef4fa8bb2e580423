"""Who outlives a process killed in the middle of a compile (run as ``python -m``).

``python -m tests.ptx.orphans CACHE PTX`` makes itself a child subreaper
(``PR_SET_CHILD_SUBREAPER``), so that whatever its child leaves behind is re-parented to it
rather than to init; starts a child Python that loads module ``PTX`` and compiles it in
the background into cache directory ``CACHE``; waits until that child's compiler proper
(``cc1``) runs on a kernel; SIGKILLs the child; then reaps every orphan and prints one JSON
line: the ``cc1`` pids seen, each orphan reaped as ``[pid, name, exit status, signal]``,
and the processes still running GRACE seconds after the kill (which it then kills).  Run it with
``$CC`` a compiler whose kernels never finish compiling (their ``cc1`` reads a FIFO no one
writes): a compile that dies with its parent leaves orphans that were killed (signal 9)
and no survivor; one that does not leaves ``cc``/``cc1`` running.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
WAIT = 120.0                # seconds to wait for the compile to start
GRACE = 10.0                # seconds the orphans have to die once the child is killed
CHILD = """
import sys, time
from gdevd.gpu.ptx import jit, load_module
jit.set_engine("auto")
mod = load_module(open(sys.argv[1]).read(), "victim")
mod.start_compile()
print("started", flush=True)
time.sleep(600)
"""


def _children(pid: int) -> list[int]:
    """Pids whose parent is ``pid`` (started by any of its threads)."""
    kids = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            kids += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            continue
    return kids


def _descendants(pid: int) -> dict[int, str]:
    """Every live descendant of ``pid``: its name (``comm``) and command line."""
    found, todo = {}, [pid]
    while todo:
        for c in _children(todo.pop()):
            try:
                found[c] = Path(f"/proc/{c}/comm").read_text().strip() + " " + \
                    Path(f"/proc/{c}/cmdline").read_text().replace("\0", " ")
            except OSError:
                continue
            todo.append(c)
    return found


def _compiling(pid: int) -> list[int]:
    """The ``cc1`` processes below ``pid`` compiling a kernel (not the compiler's own
    ``--version`` and ``--help=target`` queries that precede the build)."""
    return [p for p, what in _descendants(pid).items()
            if what.startswith("cc1 ") and "/gdev-jit-" in what]


def main(cache: str, ptx: str) -> None:
    """See the module docstring."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_SET_CHILD_SUBREAPER")
    env = {**os.environ, "GDEV_JIT_CACHE": cache}
    child = subprocess.Popen([sys.executable, "-c", CHILD, ptx], env=env,
                             stdout=subprocess.PIPE, text=True)
    try:
        cc1, names = _kill_mid_compile(child)
    finally:
        child.kill()                    # also if this process is interrupted first
        child.wait()
    reaped, end = [], time.monotonic() + GRACE
    while time.monotonic() < end:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:       # no child left: every orphan is reaped
            break
        if pid == 0:
            time.sleep(0.01)
            continue
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
        reaped.append([pid, names.get(pid, "?"), code, sig])
    survivors = _descendants(os.getpid())
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    print(json.dumps({"cc1": sorted(cc1), "reaped": reaped,
                      "survivors": sorted(w.split()[0] for w in survivors.values())}))


def _kill_mid_compile(child: subprocess.Popen) -> tuple[list[int], dict[int, str]]:
    """Wait (up to WAIT seconds) until ``child`` runs a ``cc1``, then SIGKILL it: (the
    ``cc1`` pids, the name of each descendant) as they were just before."""
    assert child.stdout is not None and child.stdout.readline().strip() == "started"
    end = time.monotonic() + WAIT
    while not (cc1 := _compiling(child.pid)):
        if time.monotonic() > end:
            raise TimeoutError(f"no cc1 under pid {child.pid} within {WAIT} s")
        time.sleep(0.01)
    names = {p: what.split()[0] for p, what in _descendants(child.pid).items()}
    child.kill()
    return cc1, names


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    main(*sys.argv[1:3])
