"""The compiled engine's threads (gdevd/gpu/ptx/jit/team.h): a slice's groups of slots run
on a C team joined by one call, with the GIL released.  Every group runs once however many
threads a team could get, kernels that call into the host (printf) do so from the team's
threads, callers running slices at once each get a team of their own, and a forked child
makes its own team instead of waiting on threads it does not have."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from gdevd.gpu.ptx import load_module
from gdevd.gpu.ptx.jit import launch as jit_launch

from .helpers import Device, load
from .test_printf import Sink

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.parametrize("engine", ["jit"], indirect=True),
              pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")]

# every thread adds its global index into a per-block sum and counts itself
PTX = """.version 7.0
.target sm_75
.address_size 64
.visible .entry sums(.param .u64 sums, .param .u64 count)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [sums];
    ld.param.u64 %rd2, [count];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mad.lo.u32 %r4, %r2, %r3, %r1;
    mul.wide.u32 %rd3, %r2, 4;
    add.u64 %rd4, %rd1, %rd3;
    atom.global.add.u32 %r5, [%rd4], %r4;
    atom.global.add.u32 %r6, [%rd2], 1;
    ret;
}
"""


def _threads(n: int):
    """Run the test's launches on ``n`` engine threads, then restore the setting."""
    old = jit_launch.THREADS
    jit_launch.set_threads(n)
    return old


def _sums(grid: int, block: int, budget: int | None) -> tuple[list[int], int, int]:
    """(per-block sums, count, engine threads used) of one launch of ``sums``."""
    mod, dev = load_module(PTX, "sums"), Device()
    sums, count = dev.put(np.zeros(grid, np.uint32)), dev.put(np.zeros(1, np.uint32))
    launch = dev.launch(mod, "sums", (grid,), (block,), sums, count, budget_steps=budget)
    assert launch.engine == "jit", mod.jit.compiled.rejected
    return dev.get(sums, grid, np.uint32).tolist(), int(dev.get(count, 1, np.uint32)[0]), \
        launch.threads


def _want(grid: int, block: int) -> list[int]:
    return [sum(range(b * block, (b + 1) * block)) for b in range(grid)]


@pytest.mark.parametrize("threads,budget", [(2, None), (2, 3), (3, 1), (70, 2)])
def test_every_group_runs_once_in_every_slice(engine, threads, budget):
    """Many small slices on 2-3 threads, and more groups (70) than a team has helpers
    (TEAM_MAX 64: the caller runs the rest): each block's work is done exactly once."""
    old = _threads(threads)
    try:
        grid, block = 96, 64
        sums, count, used = _sums(grid, block, budget)
        assert used == threads
        assert sums == _want(grid, block) and count == grid * block
    finally:
        jit_launch.set_threads(old)


def test_a_kernel_prints_from_the_teams_threads(engine):
    """64 blocks of 8 threads (above ONE_THREAD_MAX: both engine threads run blocks) print
    through the host callback from a team thread and the caller's; the text still comes
    block after block."""
    old = _threads(2)
    try:
        dev, mod, sink = Device(), load("printf"), Sink()
        out = dev.alloc(4 * 512)
        launch = dev.prepare(mod, "two_calls", (64,), (8,), out,
                             data_base=dev.load_data(mod))
        launch.printf = sink
        while not launch.run(50):
            pass
        assert launch.engine == "jit" and launch.threads == 2
        want = "".join(f"b{b} t{t} first\n" * (k == 0) + f"b{b} t{t} sum 28\n" * (k == 1)
                       for b in range(64) for k in (0, 1) for t in range(8))
        assert sink.data.decode() == want
        assert (dev.get(out, 512, np.int32) == 3).all()
    finally:
        jit_launch.set_threads(old)


def test_callers_at_once_each_get_a_team(engine):
    """Four Python threads run sliced launches at the same time (as the compute engines of
    several GPUs do): every result is right, none waits on another's team."""
    old = _threads(2)
    errors: list[BaseException] = []

    def caller():
        try:
            for _ in range(5):
                sums, count, _ = _sums(32, 64, 4)
                assert sums == _want(32, 64) and count == 32 * 64
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
    try:
        load_module(PTX, "sums").start_compile(wait=True)   # compiled before the race
        callers = [threading.Thread(target=caller) for _ in range(4)]
        for t in callers:
            t.start()
        for t in callers:
            t.join(120)
        assert not any(t.is_alive() for t in callers), "a caller never returned"
        assert not errors, errors
    finally:
        jit_launch.set_threads(old)


FORK = textwrap.dedent("""
    import os, sys, time
    import numpy as np
    sys.path.insert(0, {tests!r})
    from gdevd.gpu.ptx import jit
    from gdevd.gpu.ptx.jit import launch as jit_launch
    from ptx import test_jit_team as t
    jit.set_engine("jit")
    jit_launch.set_threads(2)
    assert t._sums(16, 64, 2)[0] == t._want(16, 64)      # the parent's team exists now
    pid = os.fork()
    if pid == 0:
        ok = t._sums(16, 64, 2)[0] == t._want(16, 64)
        os._exit(0 if ok else 3)
    for _ in range(600):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            sys.exit(os.waitstatus_to_exitcode(status))
        time.sleep(0.1)
    os.kill(pid, 9)
    sys.exit("the forked child's launch never finished")
""")


def test_a_forked_child_makes_its_own_team(engine):
    """After a two-thread launch, fork: the child's two-thread launch completes (the
    parent's team has no threads in the child)."""
    code = FORK.format(tests=str(ROOT / "tests"))
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _helper_nices() -> list[int]:
    """The niceness of every thread of this process that Python did not start (the teams'
    helpers, and any other library's threads)."""
    python = {t.native_id for t in threading.enumerate()}
    out = []
    for tid in os.listdir("/proc/self/task"):
        if int(tid) not in python:
            stat = open(f"/proc/self/task/{tid}/stat").read()
            out.append(int(stat.rsplit(")", 1)[1].split()[16]))    # field 19: nice
    return out


def test_helpers_take_their_callers_niceness(engine):
    """A team made by a caller at one niceness serves a caller seven nicer (as the compute
    engine's thread is, gdevd/gpu/compute.py): its helper runs at that niceness too."""
    old = _threads(2)
    box: dict[str, object] = {}

    def nicer_caller():
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + 7)
        box["nice"] = os.getpriority(os.PRIO_PROCESS, tid)
        box["sums"] = _sums(32, 64, None)[0]
        box["helpers"] = _helper_nices()
    try:
        assert _sums(32, 64, None)[0] == _want(32, 64)      # a team at this niceness
        before = _helper_nices()
        t = threading.Thread(target=nicer_caller)
        t.start()
        t.join(120)
        assert box["sums"] == _want(32, 64)
        assert box["nice"] not in before and box["nice"] in box["helpers"], (before, box)
    finally:
        jit_launch.set_threads(old)
