"""An interpreted launch moves to its kernel's compiled form between two waves, once that is
ready (gdevd/gpu/ptx/tierup.py, the tiered ``auto`` policy): the blocks not yet started run
compiled, the result is the same, and the launch's stats count both parts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gdevd.gpu.ptx import jit, load_module
from gdevd.gpu.ptx.executor import WAVE_THREADS

from .helpers import Device

MADD = (Path(__file__).resolve().parents[2] / "kernels" / "madd.ptx").read_text()
N = 4 * WAVE_THREADS            # four waves of the interpreter


def _madd(dev: Device, mod):
    a = np.arange(N, dtype=np.uint32)
    b = a * 5
    pa, pb, pc = dev.put(a), dev.put(b), dev.alloc(4 * N)
    launch = dev.prepare(mod, "add", (N // 256,), (256,), pa, pb, pc, N)
    return launch, pc, a + b


@pytest.mark.parametrize("engine", ["jit"], indirect=True)
def test_a_long_launch_tiers_up_between_waves(tmp_path, monkeypatch):
    monkeypatch.setenv("GDEV_JIT_CACHE", str(tmp_path))
    jit.set_engine("auto")              # (the engine fixture restores the policy)
    mod = load_module(MADD, "madd")     # not compiled, nor compiling: launches interpret
    dev = Device(64 << 20)
    launch, out, want = _madd(dev, mod)
    assert launch.engine == "interp" and not launch.run(1)     # inside the first wave
    mod.start_compile(wait=True)
    assert not launch.run(1)            # still inside it: no block may change engines
    assert launch.rest is None
    while not launch.run(1 << 20):
        pass
    assert launch.engine == "jit" and launch.rest is not None
    assert (dev.get(out, N, np.uint32) == want).all()
    # every thread's instructions counted once, as a launch run on one engine counts them
    jit.set_engine("interp")
    whole, _, _ = _madd(Device(64 << 20), mod)
    assert whole.run() and whole.engine == "interp"
    assert launch.stats.thread_instructions == whole.stats.thread_instructions


@pytest.mark.parametrize("engine", ["jit"], indirect=True)
def test_no_tier_up_under_the_interp_policy(tmp_path, monkeypatch):
    monkeypatch.setenv("GDEV_JIT_CACHE", str(tmp_path))
    mod = load_module(MADD, "madd")
    mod.start_compile(wait=True)
    jit.set_engine("interp")
    dev = Device(64 << 20)
    launch, out, want = _madd(dev, mod)
    while not launch.run(1 << 20):
        pass
    assert launch.engine == "interp" and launch.rest is None
    assert (dev.get(out, N, np.uint32) == want).all()
