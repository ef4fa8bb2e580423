"""An aligned 8- or 16-byte vector access (``ld``/``st`` ``.v2``/``.v4`` of 32- or 64-bit
elements) is one access, as on the GPU: a block reading what another block writes, on
another engine thread, sees the whole old vector or the whole new one.  CUB's decoupled
look-back (thrust's copy_if, scan, partition) publishes a tile's status and value together
as one ``st.relaxed.gpu.v2.u32`` and reads them as one ``ld.relaxed.gpu.v2.u32``; split
into two accesses, a reader saw a new status with an old value (HeCBench's logic-rewrite
got a list of one repeated node)."""

from __future__ import annotations

import numpy as np
import pytest

from gdevd.gpu.ptx import load_module
from gdevd.gpu.ptx.jit import launch as jit_launch

from .helpers import Device

_PTX = """.version 7.0
.target sm_75
.address_size 64
.visible .entry tear(.param .u64 buf, .param .u64 bad, .param .u32 iters)
{
    .reg .pred %p<4>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [buf];
    ld.param.u64 %rd2, [bad];
    ld.param.u32 %r1, [iters];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %tid.x;
    setp.ne.u32 %p1, %r3, 0;
    @%p1 bra DONE;
    mov.u32 %r4, 0;
    setp.ne.u32 %p2, %r2, 0;
    @%p2 bra READ;
WRITE:
    add.u32 %r4, %r4, 1;
    {STORE}
    setp.lt.u32 %p3, %r4, %r1;
    @%p3 bra WRITE;
    bra DONE;
READ:
    add.u32 %r4, %r4, 1;
    {LOAD}
    {CHECK}
    @%p3 bra NEXT;
    atom.global.add.u32 %r11, [%rd2], 1;
NEXT:
    setp.lt.u32 %p3, %r4, %r1;
    @%p3 bra READ;
DONE:
    ret;
}
"""
FORMS = {
    "v2.u32": ("st.relaxed.gpu.global.v2.u32 [%rd1], {%r4, %r4};",
               "ld.relaxed.gpu.global.v2.u32 {%r5, %r6}, [%rd1];",
               "setp.eq.u32 %p3, %r5, %r6;"),
    "v4.u32": ("st.relaxed.gpu.global.v4.u32 [%rd1], {%r4, %r4, %r4, %r4};",
               "ld.relaxed.gpu.global.v4.u32 {%r5, %r6, %r7, %r8}, [%rd1];",
               "setp.eq.u32 %p3, %r5, %r8;"),
    "v2.u64": ("cvt.u64.u32 %rd3, %r4;\n    st.volatile.global.v2.u64 [%rd1], {%rd3, %rd3};",
               "ld.volatile.global.v2.u64 {%rd5, %rd6}, [%rd1];",
               "setp.eq.u64 %p3, %rd5, %rd6;"),
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_vector_is_written_and_read_whole_across_engine_threads(engine, form):
    store, load, check = FORMS[form]
    text = _PTX.replace("{STORE}", store).replace("{LOAD}", load).replace("{CHECK}", check)
    mod = load_module(text, "tear")
    # the interpreter runs one warp's instruction at a time: a few rounds show it agrees
    iters, blocks = (400_000, 4) if engine == "jit" else (300, 2)
    old = jit_launch.THREADS
    jit_launch.set_threads(2)
    try:
        dev = Device()
        buf, bad = dev.put(np.zeros(4, np.uint32)), dev.put(np.zeros(1, np.uint32))
        # (blocks of 96 threads, only the first working: more threads in all than a grid
        # that runs on one engine thread, launch.ONE_THREAD_MAX)
        launch = dev.launch(mod, "tear", (blocks,), (96,), buf, bad, iters)
        assert engine == "interp" or launch.threads == 2
    finally:
        jit_launch.set_threads(old)
    assert dev.get(bad, 1, np.uint32)[0] == 0
    assert dev.get(buf, 1, np.uint32)[0] == iters        # the last write is there
