"""What a launch tells the compute engine about its quanta (gdevd/gpu/compute.py): the weight
of one of its steps against the slice cap, and which kernel and shape it is (launches of the
same key start from the last one's budget).  conftest.py runs these on both engines."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from gdevd.gpu.compute import ComputeEngine, LaunchJob
from gdevd.gpu.ptx.jit.launch import LANE_STEPS

from .helpers import Device, load


@pytest.mark.parametrize("tpb", [1, 32, 256, 1024])
def test_a_compiled_step_weighs_less_than_an_interpreted_one(engine, tpb):
    dev, mod = Device(), load("bench")
    out = dev.alloc(4 * tpb)
    launch = dev.prepare(mod, "loop", (1, 1, 1), (tpb, 1, 1), out, tpb, 10)
    want = LANE_STEPS // max(32, tpb) if engine == "jit" else 1
    assert launch.engine == engine and launch.budget_scale == want


def test_the_budget_key_names_engine_kernel_and_shape(engine):
    dev, mod = Device(), load("bench")
    out = dev.alloc(4 * 512)

    def key(grid, block, kernel="loop"):
        args = (out, 512, 10) if kernel == "loop" else (out, 10)
        return dev.prepare(mod, kernel, grid, block, *args).budget_key

    assert key((2, 1, 1), (256, 1, 1)) == key((2, 1, 1), (256, 1, 1))
    assert len({key((2, 1, 1), (256, 1, 1)), key((4, 1, 1), (128, 1, 1)),
                key((2, 1, 1), (256, 1, 1), "fmad_loop")}) == 3


def test_the_engine_runs_a_compiled_launch_above_the_interpreters_cap(engine):
    # a cap of 16 steps: the interpreter's quanta stay at 16, the compiled engine's grow to
    # 16 * budget_scale; the results are the same
    dev, mod = Device(), load("bench")
    n, iters = 256 * 64, 200
    out = dev.alloc(4 * n)
    launch = dev.prepare(mod, "loop", (64, 1, 1), (256, 1, 1), out, n, iters)
    budgets: list[int] = []
    run = launch.run
    launch.run = lambda budget=None: budgets.append(budget) or run(budget)  # type: ignore
    finished = threading.Event()
    compute = ComputeEngine("t", slice_budget=16, quantum_s=10.0)
    job = LaunchJob(launch, lambda job: finished.set())
    compute.submit(job)
    assert finished.wait(60)
    compute.close()
    assert job.error is None
    assert max(budgets) == 16 * launch.budget_scale
    i, k = np.arange(n, dtype=np.uint64)[:, None], np.arange(iters, dtype=np.uint64)[None, :]
    want = (i * k + (k ^ i)).sum(axis=1) & 0xFFFFFFFF
    assert (dev.get(out, n, np.uint32) == want).all()
