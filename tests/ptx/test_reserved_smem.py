"""The reserved shared memory region (gdevd/gpu/ptx/reserved.py, data/reserved_smem.cu):
cooperative groups' tiles of 64 and 128 threads reduce through it as nvcc compiles them for
sm_80, beside the block's own static and dynamic shared memory, which stays untouched; the
registers name one region of 1 KiB that overlaps neither.  conftest runs each test on both
engines."""

from __future__ import annotations

import numpy as np
import pytest

from gdevd.gpu.ptx import reserved

from .helpers import Device, load


@pytest.fixture(scope="module")
def mod():
    return load("reserved_smem")


def _compiled(mod, engine, kernel):
    if engine == "jit":
        mod.start_compile(wait=True)
        assert mod.jit.engine_of(kernel) == "jit", mod.jit.compiled.rejected


def test_tiles_wider_than_a_warp_reduce(mod, engine):
    _compiled(mod, engine, "tile_sums")
    dev = Device()
    n = 256
    data = np.random.default_rng(3).integers(-1000, 1000, n).astype(np.int32)
    outs = [dev.alloc(4 * n) for _ in range(3)]
    dev.launch(mod, "tile_sums", 1, n, dev.put(data), *outs, shared=4 * n)
    got64, got128, echo = (dev.get(o, n, np.int32) for o in outs)
    np.testing.assert_array_equal(got64, np.repeat(data.reshape(-1, 64).sum(1), 64))
    np.testing.assert_array_equal(got128, np.repeat(-data.reshape(-1, 128).sum(1), 128))
    assert not echo.any()           # mine[t] + dyn[t]: the reductions left both alone


def test_the_registers_name_one_region_apart_from_the_blocks_own(mod, engine):
    _compiled(mod, engine, "where")
    dev = Device()
    out = dev.alloc(4 * 7)
    dev.launch(mod, "where", 1, 1, out, shared=64)
    begin, end, cap, off0, off1, mine, dyn = (int(v) for v in dev.get(out, 7, np.uint32))
    assert (cap, end - begin) == (reserved.REGION, reserved.REGION)
    assert begin % 16 == 0 and begin <= off0 < off1 < end and end - off1 >= 288
    assert mine + 32 <= begin and end <= dyn    # static below, dynamic above


def test_kernels_that_do_not_read_the_registers_keep_their_layout(mod):
    info = mod.kernels["where"]
    plain = load("surface")                     # no reserved region: no extra shared memory
    assert all(reserved.NAME not in k.shared_offsets for k in plain.kernels.values())
    assert reserved.NAME in info.shared_offsets
