"""Cooperative launches on both engines (gdevd/gpu/ptx/coop.py): the grid workspace reaches
the kernel through ``%envreg1/2``, ``grid.sync()`` as nvcc emits it (a spin on global memory)
completes because every block of the grid is resident and takes turns, across budget slices
and engine threads; a barrier that cannot complete ends at the watchdog."""

from __future__ import annotations

import errno

import numpy as np
import pytest

from gdevd.errors import GdevError, KernelFault
from gdevd.gpu.ptx import coop
from gdevd.gpu.ptx.jit import launch as jit_launch

from .helpers import Device, load


def _rotate_reference(a: np.ndarray, rounds: int) -> np.ndarray:
    a = a.astype(np.int64)
    for r in range(rounds):
        a = (np.roll(a, -1) * 3 + r) % 1000003
    return a


def _rotate(dev, mod, grid, block, rounds, **kw):
    n = grid * block
    a0 = (np.arange(n, dtype=np.int64) * 7919 % 1000).astype(np.int32)
    a, tmp, ws = dev.put(a0), dev.alloc(4 * n), dev.put(np.zeros(2, np.uint32))
    # a watchdog, so that an engine that does not keep the grid resident fails, not hangs
    launch = dev.prepare(mod, "rotate", (grid,), (block,), a, tmp, rounds, grid_workspace=ws,
                         watchdog=20.0)
    budget = kw.get("budget", 20000)
    while not launch.run(budget):
        pass
    assert (dev.get(a, n, np.int32) == _rotate_reference(a0, rounds)).all()
    return launch


def test_grid_barriers_in_a_loop_over_many_blocks(engine):
    dev, mod = Device(), load("coop_sync")
    launch = _rotate(dev, mod, 48, 64, 5)
    assert launch.engine == ("jit" if engine == "jit" else "interp")


def test_grid_barriers_survive_small_budget_slices(engine):
    dev, mod = Device(), load("coop_sync")
    _rotate(dev, mod, 24, 32, 4, budget=7)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_grid_barriers_across_engine_threads(engine, threads):
    old = jit_launch.THREADS
    jit_launch.set_threads(threads)
    try:
        dev, mod = Device(), load("coop_sync")
        _rotate(dev, mod, 37, 96, 3)
    finally:
        jit_launch.set_threads(old)


def test_every_block_counted_before_any_passes_the_barrier(engine):
    dev, mod = Device(), load("coop_sync")
    grid, block = 64, 32
    count, seen = dev.put(np.zeros(1, np.uint32)), dev.alloc(4 * grid * block)
    ws = dev.put(np.zeros(2, np.uint32))
    dev.launch(mod, "census", (grid,), (block,), count, seen, -1, grid_workspace=ws)
    assert (dev.get(seen, grid * block, np.uint32) == grid).all()
    # the barrier's word counted the grid in and flipped its top bit once
    assert dev.get(ws + 4, 1, np.uint32)[0] == 0x80000000


def test_the_workspace_is_read_through_envreg_and_launches_without_one_trap(engine):
    dev, mod = Device(), load("coop_sync")
    count, seen = dev.put(np.zeros(1, np.uint32)), dev.alloc(4 * 64)
    with pytest.raises(KernelFault) as exc:
        dev.launch(mod, "census", (2,), (32,), count, seen, -1)
    assert exc.value.errno == errno.EIO and "trap" in str(exc.value)


def test_a_block_that_leaves_before_the_barrier_ends_at_the_watchdog(engine):
    dev, mod = Device(), load("coop_sync")
    count, seen = dev.put(np.zeros(1, np.uint32)), dev.alloc(4 * 8 * 32)
    ws = dev.put(np.zeros(2, np.uint32))
    with pytest.raises(KernelFault) as exc:
        dev.launch(mod, "census", (8,), (32,), count, seen, 5, grid_workspace=ws,
                   watchdog=0.5, budget_steps=2000)
    assert exc.value.errno == errno.ETIME and "watchdog" in str(exc.value)


def test_a_grid_whose_thread_state_cannot_be_resident_is_refused(engine, monkeypatch):
    dev, mod = Device(), load("coop_sync")
    monkeypatch.setattr(coop, "COOP_BYTES", 1 << 16)
    with pytest.raises(GdevError) as exc:
        dev.prepare(mod, "rotate", (64,), (256,), 0, 0, 1, grid_workspace=dev.alloc(8))
    assert exc.value.errno == errno.EOVERFLOW and "resident" in str(exc.value)


@pytest.mark.parametrize("bad", [-1, 1 << 64, True, 1.5])
def test_a_workspace_that_is_not_an_address_is_refused(engine, bad):
    dev, mod = Device(), load("coop_sync")
    with pytest.raises(GdevError) as exc:
        dev.prepare(mod, "rotate", (2,), (32,), 0, 0, 1, grid_workspace=bad)
    assert exc.value.errno == errno.EINVAL


def test_a_block_spinning_at_the_barrier_yields_its_turn(engine):
    """One engine thread, one large slice: the blocks take short turns (coop.QUANTUM), so
    the spinning costs a few thousand steps, not the slice's budget (millions)."""
    old = jit_launch.THREADS
    jit_launch.set_threads(1)
    try:
        dev, mod = Device(), load("coop_sync")
        launch = _rotate(dev, mod, 16, 32, 3, budget=10**6)
    finally:
        jit_launch.set_threads(old)
    assert launch.stats.instructions < 50_000


def test_state_reused_after_a_cooperative_launch_has_no_workspace(engine):
    """The engines keep bound state for later launches of the same shape (waves, slots):
    a plain launch after a cooperative one reads no workspace, and traps at the barrier."""
    dev, mod = Device(), load("coop_sync")
    count, seen = dev.put(np.zeros(1, np.uint32)), dev.alloc(4 * 8 * 32)
    dev.launch(mod, "census", (8,), (32,), count, seen, -1,
               grid_workspace=dev.put(np.zeros(2, np.uint32)))
    with pytest.raises(KernelFault) as exc:
        dev.launch(mod, "census", (8,), (32,), count, seen, -1)
    assert exc.value.errno == errno.EIO and "trap" in str(exc.value)
