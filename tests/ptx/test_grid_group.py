"""``cooperative_groups::this_grid()`` on both engines: its rank and size work (the kernels
read ``%envreg1/2``, 0 outside a cooperative launch: docs/ptx-engine.md); ``grid.sync()``
outside a cooperative launch traps (cooperative ones: test_coop.py)."""

from __future__ import annotations

import errno

import numpy as np
import pytest

from gdevd.errors import KernelFault

from .helpers import Device, load


def test_grid_rank_and_size_drive_a_grid_stride_loop(engine):
    dev, mod = Device(), load("grid_group")
    n = 5000
    out = dev.alloc(4 * n)
    dev.launch(mod, "stride", (3,), (128,), out, n)
    assert (dev.get(out, n, np.int32) == np.arange(n) * 2 + 3).all()


def test_grid_sync_outside_a_cooperative_launch_traps(engine):
    dev, mod = Device(), load("grid_group")
    out = dev.alloc(4 * 64)
    with pytest.raises(KernelFault) as exc:
        dev.launch(mod, "synced", (2,), (32,), out, 64)
    assert exc.value.errno == errno.EIO and "trap" in str(exc.value)
