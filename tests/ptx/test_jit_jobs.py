"""The compiler processes die with the process that started them, and with their build.

Each test uses the real C compiler on real input; a process counts as gone once it is a
zombie (its parent may be an init that reaps late)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from gdevd.gpu.compute import ModuleCache
from gdevd.gpu.ptx import jit, load_module
from gdevd.gpu.ptx.jit import build
from gdevd.gpu.ptx.jit.jobs import Cancelled, Jobs

ROOT = Path(__file__).resolve().parents[2]
only_jit = pytest.mark.parametrize("engine", ["jit"], indirect=True)
needs_cc = pytest.mark.skipif(build.compiler() is None, reason="no C compiler")


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie has finished)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _cc1_of(pid: int) -> list[int]:
    """The ``cc1`` processes among the children of ``pid``."""
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    return [int(k) for k in kids if Path(f"/proc/{k}/comm").read_text().strip() == "cc1"]


def _endless(tmp: Path) -> list[str]:
    """A compile that never finishes by itself: its ``cc1`` waits for a writer to open the
    FIFO it reads its source from (and outlives a SIGKILLed driver forever)."""
    fifo = tmp / "never.c"
    os.mkfifo(fifo)
    return build._command(["-O2", "-c", "-x", "c", "-o", str(tmp / "never.o"), str(fifo)])


def _wait_gone(pids: list[int], limit: float = 30.0) -> list[int]:
    """``pids`` still running after up to ``limit`` seconds (a bound on a kill's delivery:
    a process that nobody kills runs forever)."""
    end = time.monotonic() + limit
    while any(_alive(p) for p in pids) and time.monotonic() < end:
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


# $CC for a compile that never ends: each kernel's source is read from a FIFO that no one
# opens for writing (the real cc1 waits for a writer forever, even once orphaned)
ENDLESS_CC = """#!/bin/sh
for a; do
  shift
  case "$a" in
    *.c) mkfifo "$a.fifo"; set -- "$@" -x c "$a.fifo" ;;
    *) set -- "$@" "$a" ;;
  esac
done
exec {real} "$@"
"""


@needs_cc
@only_jit
def test_a_compile_dies_with_the_process_that_started_it(tmp_path):
    """A child Python SIGKILLed while its background compile runs leaves no compiler
    behind: every process of the compile that outlived it was killed, none runs on.  Its
    files (the compiler's temporary ones too) are all in its build directory, which the
    next process's first build removes (scratch.py)."""
    cc = tmp_path / "endless-cc"
    cc.write_text(ENDLESS_CC.format(real=build.compiler()))
    cc.chmod(0o755)
    systmp = tmp_path / "systmp"        # the processes' temporary directory ($TMPDIR)
    systmp.mkdir()
    env = {**os.environ, "CC": str(cc), "TMPDIR": str(systmp)}
    out = subprocess.run([sys.executable, "-m", "tests.ptx.orphans", str(tmp_path / "cache"),
                          str(ROOT / "kernels" / "aes.ptx")],
                         cwd=ROOT, capture_output=True, text=True, timeout=240, check=True,
                         env=env)
    report = json.loads(out.stdout.splitlines()[-1])
    assert report["cc1"] and report["survivors"] == [], report
    assert report["reaped"] and all(sig == 9 for *_, sig in report["reaped"]), report
    left = sorted(p.name for p in systmp.iterdir())
    assert left and all(re.fullmatch(r"gdev-jit-\d+-\w+", n) for n in left), left
    assert any(p.name.startswith("cc") for p in (systmp / left[0]).iterdir())  # cc's own
    sweep = subprocess.run([sys.executable, "-c", "from gdevd.gpu.ptx.jit import scratch; "
                            "print(scratch.sweep_stale())"],
                           cwd=ROOT, capture_output=True, text=True, timeout=60, env=env)
    assert sweep.stdout.strip() == str(len(left)), sweep.stderr
    assert list(systmp.iterdir()) == []


def _cc1_started(jobs: Jobs) -> list[int]:
    """The ``cc1`` of the first job, once it runs."""
    while not (found := _cc1_of(jobs.running[0].proc.pid)):
        time.sleep(0.01)
    return found


@needs_cc
@only_jit
def test_a_failed_job_ends_its_siblings_compilers_too(tmp_path):
    """One job fails: leaving the block kills the others' ``cc1`` (not only their
    drivers, whose children would carry on)."""
    with pytest.raises(RuntimeError, match="cc failed"), Jobs(tmp_path, limit=2) as jobs:
        jobs.start(_endless(tmp_path))
        cc1 = _cc1_started(jobs)
        jobs.start(build._command(["-c", "-o", str(tmp_path / "bad.o"),
                                   str(tmp_path / "missing.c")]))
        jobs.wait()
    assert _wait_gone(cc1) == []


@needs_cc
@only_jit
def test_cancel_kills_the_jobs_and_the_waiting_build_raises_cancelled(tmp_path):
    with Jobs(tmp_path) as jobs:
        jobs.start(_endless(tmp_path))
        cc1 = _cc1_started(jobs)
        threading.Timer(0.05, jobs.cancel).start()
        with pytest.raises(Cancelled):
            jobs.wait()
        with pytest.raises(Cancelled):
            jobs.start(["true"])
    assert _wait_gone(cc1) == []


@only_jit
def test_the_lifeline_is_held_by_no_child(tmp_path):
    """Only this process holds the guard's pipe: a child started meanwhile does not
    inherit it (else the guard would wait for that child's end too)."""
    with Jobs(tmp_path) as jobs:
        child = subprocess.run(["ls", "-l", "/proc/self/fd/"], capture_output=True, text=True,
                               check=True)
        guard_stdin = os.readlink(f"/proc/{jobs._guard.pid}/fd/0")
    assert guard_stdin.startswith("pipe:") and guard_stdin not in child.stdout


def _our_cc1() -> list[int]:
    """The ``cc1`` processes whose driver is a child of any thread of this process."""
    drivers = [int(p) for task in Path("/proc/self/task").iterdir()
               for p in (task / "children").read_text().split()]
    return [c for d in drivers for c in _cc1_of(d)]


@needs_cc
@only_jit
def test_a_cancelled_compile_leaves_the_module_on_the_interpreter(tmp_path, monkeypatch):
    monkeypatch.setenv("GDEV_JIT_CACHE", str(tmp_path))
    mod = load_module((ROOT / "kernels" / "aes.ptx").read_text(), "aes")
    mod.start_compile()
    while not (cc1 := _our_cc1()):
        time.sleep(0.01)
    mod.jit.cancel()
    assert mod.jit.wait(60)
    assert mod.jit.status == "interp" and mod.jit.compiled is None
    assert _wait_gone(cc1) == []
    assert not list(tmp_path.glob("*/*.json"))


@needs_cc
@only_jit
def test_an_evicted_module_stops_compiling_until_a_launch_asks(tmp_path, monkeypatch):
    """The daemon's decoded-module cache stops the compile of a module it evicts (a tenant
    loading ever new modules keeps at most the cache's capacity compiling); a context that
    still launches it starts the compile again (its launch runs interpreted meanwhile)."""
    monkeypatch.setenv("GDEV_JIT_CACHE", str(tmp_path))
    cache = ModuleCache(1)
    aes = load_module((ROOT / "kernels" / "aes.ptx").read_text(), "aes")
    cache.insert(cache.key(b"aes"), aes)
    while not (cc1 := _our_cc1()):
        time.sleep(0.01)
    cache.insert(cache.key(b"madd"), load_module((ROOT / "kernels" / "madd.ptx").read_text(),
                                                 "madd"))
    assert aes.jit.wait(60) and aes.jit.status == "interp" and aes.jit.compiled is None
    assert _wait_gone(cc1) == []
    jit.set_engine("auto")              # (the engine fixture restores the policy)
    assert aes.jit.runnable("aes256_xts_encrypt") is None      # interpreted this time
    assert aes.jit.status == "compiling"
    assert aes.jit.wait(240) and aes.jit.status == "jit"
    assert aes.jit.runnable("aes256_xts_encrypt") is not None


@needs_cc
@only_jit
def test_two_builds_of_one_module_at_once_compile_it_once(tmp_path, monkeypatch):
    """The second waits for the first's lock and loads its entry (two daemons, or two
    threads, loading one module)."""
    monkeypatch.setenv("GDEV_JIT_CACHE", str(tmp_path))
    text = (ROOT / "kernels" / "madd.ptx").read_text()
    mods = [load_module(text, "madd") for _ in range(2)]
    together = threading.Barrier(2)
    results: list[build.Compiled] = []

    def compile_one(mod) -> None:
        together.wait()
        results.append(build.build(mod, text))

    threads = [threading.Thread(target=compile_one, args=(m,)) for m in mods]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.cached for r in results) == [False, True]
    assert results[0].kernels == results[1].kernels
