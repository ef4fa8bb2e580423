"""A small grid (at most jit/launch.py's ONE_THREAD_MAX threads) runs on one engine thread
under the compiling engine: its blocks start in order, as the interpreter's wave runs them,
so ids its blocks take from an atomic counter (NVIDIA's cdpSimplePrint numbers its blocks
so) come out the same on both engines, run after run.  A larger grid still spreads over
the engine threads."""

from __future__ import annotations

import numpy as np
import pytest

from gdevd.gpu.ptx import load_module
from gdevd.gpu.ptx.jit import launch as jit_launch

from .helpers import Device

PTX = """.version 7.0
.target sm_75
.address_size 64
.visible .entry uids(.param .u64 counter, .param .u64 out)
{
    .reg .pred %p1;
    .reg .b32 %r<4>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [counter];
    ld.param.u64 %rd2, [out];
    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra DONE;
    atom.global.add.u32 %r2, [%rd1], 1;
    mov.u32 %r3, %ctaid.x;
    mul.wide.u32 %rd3, %r3, 4;
    add.u64 %rd4, %rd2, %rd3;
    st.global.u32 [%rd4], %r2;
DONE:
    ret;
}
"""


@pytest.mark.parametrize("block", [1, 32])
def test_blocks_of_a_small_grid_take_ids_in_order(engine, block):
    mod, grid = load_module(PTX, "uids"), 256 // block
    old = jit_launch.THREADS
    jit_launch.set_threads(2)
    try:
        for _ in range(5):
            dev = Device()
            counter, out = dev.put(np.zeros(1, np.uint32)), dev.alloc(4 * grid)
            launch = dev.launch(mod, "uids", (grid,), (block,), counter, out)
            assert dev.get(out, grid, np.uint32).tolist() == list(range(grid))
            assert engine == "interp" or (launch.engine, launch.threads) == ("jit", 1)
    finally:
        jit_launch.set_threads(old)


def test_a_larger_grid_uses_every_engine_thread(engine):
    mod, grid = load_module(PTX, "uids"), 9
    old = jit_launch.THREADS
    jit_launch.set_threads(2)
    try:
        dev = Device()
        counter, out = dev.put(np.zeros(1, np.uint32)), dev.alloc(4 * grid)
        launch = dev.launch(mod, "uids", (grid,), (32,), counter, out)
        assert sorted(dev.get(out, grid, np.uint32).tolist()) == list(range(grid))
        assert engine == "interp" or launch.threads == 2
    finally:
        jit_launch.set_threads(old)
