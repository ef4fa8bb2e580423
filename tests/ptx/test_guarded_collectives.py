"""Warp collectives under a guard (``@%p shfl.sync``, ``vote``, ``activemask``, ``match``,
``redux``, ``elect``): only the lanes whose guard holds execute them, on both engines (the
compiling engine runs the collective over those lanes: jit/cgen.py's GUARDABLE); the other
lanes keep their registers, and as sources or group members they count as not executing."""

from __future__ import annotations

import numpy as np

from gdevd.gpu.ptx import jit, load_module

from .helpers import Device

PTX = """.version 8.0
.target sm_90
.address_size 64
.visible .entry guarded(.param .u64 out)
{
    .reg .pred %p<4>;
    .reg .b32 %r<20>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    rem.u32 %r2, %r1, 3;
    setp.ne.u32 %p1, %r2, 0;            // the guard: tid % 3 != 0
    and.b32 %r3, %r1, 1;
    setp.ne.u32 %p2, %r3, 0;            // odd lanes
    mul.lo.u32 %r4, %r1, 10;            // each lane's value
    and.b32 %r5, %r1, 3;                // match key
    mov.u32 %r10, 999;
    mov.u32 %r11, 999;
    mov.u32 %r12, 999;
    mov.u32 %r13, 999;
    mov.u32 %r14, 999;
    mov.u32 %r15, 999;
    @%p1 shfl.sync.down.b32 %r10, %r4, 1, 31, -1;
    @%p1 vote.sync.ballot.b32 %r11, %p2, -1;
    @%p1 activemask.b32 %r12;
    @%p1 match.any.sync.b32 %r13, %r5, -1;
    @%p1 redux.sync.add.u32 %r14, %r4, -1;
    @%p1 elect.sync %r15|%p3, -1;
    mul.wide.u32 %rd2, %r1, 24;
    add.u64 %rd3, %rd1, %rd2;
    st.global.v2.u32 [%rd3], {%r10, %r11};
    st.global.v2.u32 [%rd3+8], {%r12, %r13};
    st.global.v2.u32 [%rd3+16], {%r14, %r15};
    ret;
}
"""


def _model(n: int) -> np.ndarray:
    """What each thread stores: a lane whose guard fails keeps 999 everywhere."""
    out = np.full((n, 6), 999, np.uint32)
    for w in range(0, n, 32):
        lanes = [t for t in range(w, min(w + 32, n)) if t % 3]
        bits = sum(1 << (t - w) for t in lanes)
        for t in lanes:
            j = t + 1                         # down 1 within the warp, clamp 31
            src = (j * 10 if j in lanes else 0) if j - w <= 31 and j < w + 32 else t * 10
            out[t] = [src, sum(1 << (u - w) for u in lanes if u % 2), bits,
                      sum(1 << (u - w) for u in lanes if u % 4 == t % 4),
                      sum(u * 10 for u in lanes), lanes[0] - w]
    return out


def test_guarded_collectives_run_for_the_guarded_lanes_only(engine):
    mod, n = load_module(PTX, "guarded"), 64
    dev = Device()
    out = dev.alloc(24 * n)
    launch = dev.launch(mod, "guarded", (1,), (n,), out)
    assert (dev.get(out, 6 * n, np.uint32).reshape(n, 6) == _model(n)).all()
    if jit.engine() == "jit":
        assert launch.engine == "jit", mod.jit.compiled.rejected
