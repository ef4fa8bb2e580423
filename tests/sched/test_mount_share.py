"""Through a mounted daemon: two GPU-eater processes interleave with identical results, and
a SCHED_IDLE opener's context is a guest."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ..daemon.conftest import start_gdevd, stop_gdevd
from .kernels import LOOP_PTX
from .test_preempt import loop_model

pytestmark = pytest.mark.mount

SIZE, ITERS = 512, 100_000

# An eater: `loop` over SIZE threads, ITERS iterations; prints its result's hex digest.
EATER = f"""
import hashlib, struct, sys, libgdev, numpy
code = {LOOP_PTX!r}
h = libgdev.gopen(0)
caddr = h.gmalloc(len(code))
h.gmemcpy_to_device(caddr, code)
data = h.gmalloc(4 * {SIZE})
k = libgdev.GdevKernel(caddr, len(code), "loop", grid=({SIZE} // 256, 1, 1), block=(256, 1, 1),
                       params=struct.pack("<QII", data, {SIZE}, {ITERS}))
print("ready", flush=True)
sys.stdin.readline()
h.gsync(h.glaunch(k))
out = numpy.empty({SIZE}, numpy.uint32)
h.gmemcpy_from_device(out, data)
print(out.tobytes().hex(), flush=True)
"""


def _read(d, *parts: str) -> str:  # type: ignore[no-untyped-def]
    with open(d.proc_path(*parts)) as f:
        return f.read()


@pytest.mark.timeout(240)
def test_two_eater_processes_interleave_with_identical_results() -> None:
    d = start_gdevd()
    try:
        eaters = [subprocess.Popen([sys.executable, "-c", EATER], env=d.env(), text=True,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE)
                  for _ in range(2)]
        for e in eaters:
            assert e.stdout is not None and e.stdout.readline().strip() == "ready"
        for e in eaters:                                     # go together
            assert e.stdin is not None
            e.stdin.write("\n")
            e.stdin.flush()
        outs = [e.communicate(timeout=200)[0].strip() for e in eaters]
        want = loop_model(SIZE, ITERS).tobytes().hex()
        assert outs == [want, want]
        assert int(_read(d, "vd0", "preemptions")) >= 1      # the engine changed hands
        assert int(_read(d, "vd0", "launches")) == 2
    finally:
        assert stop_gdevd(d) == 0


GUEST = """
os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
h = libgdev.gopen(0)
print("open", flush=True)
sys.stdin.readline()
"""


@pytest.mark.timeout(120)
def test_a_sched_idle_opener_is_a_guest_in_proc() -> None:
    d = start_gdevd()
    try:
        prologue = "import os, sys, libgdev\n"
        c = subprocess.Popen([sys.executable, "-c", prologue + GUEST], env=d.env(), text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            assert c.stdout is not None and c.stdout.readline().strip() == "open"
            rows = [line.split() for line in _read(d, "guests").splitlines()[1:]]
            assert [r[1:] for r in rows] == [["1", "-"]]      # a guest, by its task
            with open(d.proc_path("guests"), "w") as f:
                f.write(f"{rows[0][0]} 0")
            assert _read(d, "guests").splitlines()[1].split()[1:] == ["0", "0"]
        finally:
            c.kill()
            c.wait()
        assert "gpu0" in _read(d, "guest_mode")
    finally:
        assert stop_gdevd(d) == 0
