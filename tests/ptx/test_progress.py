"""Forward progress under divergence: spin locks and flag waits between blocks of a wave
terminate (the scheduler eventually runs the threads ahead of the spinners)."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import Device, load

MOD = load("spinlock")


@pytest.mark.parametrize("blocks", [2, 37])
def test_inter_block_spin_lock(blocks):
    dev = Device()
    lock, counter = dev.put(np.zeros(1, np.int32)), dev.put(np.zeros(1, np.int32))
    launch = dev.prepare(MOD, "block_lock", (blocks,), (32,), lock, counter, watchdog=20)
    assert launch.run()
    assert dev.get(counter, 1, np.int32)[0] == blocks


def test_flag_wait_across_blocks():
    dev = Device()
    flag, out = dev.put(np.zeros(1, np.int32)), dev.put(np.zeros(8, np.int32))
    launch = dev.prepare(MOD, "flag_wait", (8,), (64,), flag, out, watchdog=20)
    assert launch.run()
    assert dev.get(out, 8, np.int32).tolist() == [sum(k * 0 for k in range(200))] + [1] * 7


def test_flag_set_after_a_barrier_in_another_block():
    dev = Device()
    flag, out = dev.put(np.zeros(1, np.int32)), dev.put(np.zeros(2, np.int32))
    launch = dev.prepare(MOD, "flag_after_barrier", (2,), (64,), flag, out, watchdog=20)
    assert launch.run()
    assert dev.get(out, 2, np.int32).tolist() == [1, 63]
