"""Vector loads/stores in every state space, ld.global.nc, generic windows, bounds checks."""

from __future__ import annotations

import errno

import numpy as np
import pytest

from gdevd.errors import KernelFault
from gdevd.gpu.ptx import load_module

from .helpers import Device

HEAD = ".version 7.5\n.target sm_75\n.address_size 64\n"

VEC = HEAD + """
.visible .entry k(.param .u64 src, .param .u64 dst)
{
.reg .b32 %r<12>; .reg .f32 %f<8>; .reg .b64 %rd<12>; .reg .b16 %rs<4>;
.shared .align 16 .b8 sm[2048];
.local .align 16 .b8 depot[32];
mov.u32 %r0, %tid.x;
ld.param.u64 %rd0, [src];
ld.param.u64 %rd1, [dst];
cvta.to.global.u64 %rd0, %rd0;
mul.wide.u32 %rd2, %r0, 16;
add.s64 %rd3, %rd0, %rd2;
ld.global.nc.v4.f32 {%f0, %f1, %f2, %f3}, [%rd3];
// shared: v4 store, v2 loads
mov.u32 %r1, sm;
shl.b32 %r2, %r0, 4;
add.s32 %r3, %r1, %r2;
st.shared.v4.f32 [%r3], {%f3, %f2, %f1, %f0};
bar.sync 0;
ld.shared.v2.f32 {%f4, %f5}, [%r3];
ld.shared.v2.f32 {%f6, %f7}, [%r3+8];
// local: v4 through a generic pointer
mov.u64 %rd4, depot;
cvta.local.u64 %rd5, %rd4;
st.v4.f32 [%rd5+16], {%f4, %f5, %f6, %f7};
ld.local.v4.u32 {%r4, %r5, %r6, %r7}, [%rd4+16];
// generic pointer into shared
cvta.shared.u64 %rd6, %rd4;
mov.u64 %rd6, 0;
cvt.u64.u32 %rd7, %r3;
cvta.shared.u64 %rd8, %rd7;
ld.u16 %rs0, [%rd8+2];
add.s64 %rd9, %rd1, %rd2;
st.global.v4.u32 [%rd9], {%r4, %r5, %r6, %r7};
mul.wide.u32 %rd10, %r0, 2;
add.s64 %rd10, %rd10, %rd1;
st.global.u16 [%rd10+4096], %rs0;
ret;
}
"""


def test_vector_accesses_in_every_space():
    dev = Device()
    n = 128
    x = np.random.default_rng(3).random((n, 4)).astype(np.float32)
    src, dst = dev.put(x), dev.alloc(8192)
    dev.launch(load_module(VEC), "k", (1,), (n,), src, dst)
    got = dev.get(dst, n * 4, np.float32).reshape(n, 4)
    assert np.array_equal(got, x[:, ::-1])
    hi16 = dev.get(dst + 4096, n, np.uint16)
    assert np.array_equal(hi16, x[:, 3].view(np.uint32) >> 16)


BAD = HEAD + """
.visible .entry k(.param .u64 p, .param .u32 off)
{
.reg .b32 %r<4>; .reg .b64 %rd<4>;
.shared .align 4 .b8 sm[64];
.local .align 4 .b8 depot[8];
ld.param.u32 %r0, [off];
ld.param.u64 %rd0, [p];
{op}
ret;
}
"""


@pytest.mark.parametrize("op,off,what", [
    ("mov.u32 %r1, sm; add.u32 %r1, %r1, %r0; ld.shared.u32 %r2, [%r1];", 64, "shared"),
    ("mov.u32 %r1, sm; add.u32 %r1, %r1, %r0; ld.shared.u32 %r2, [%r1];", 2, "misaligned"),
    ("mov.u64 %rd1, depot; cvt.u64.u32 %rd2, %r0; add.u64 %rd1, %rd1, %rd2;"
     "st.local.u32 [%rd1], %r0;", 8, "local"),
    ("cvt.u64.u32 %rd2, %r0; add.u64 %rd1, %rd0, %rd2; ld.global.v2.u32 {%r1, %r2}, [%rd1];",
     4, "misaligned"),
    ("cvt.u64.u32 %rd2, %r0; add.u64 %rd1, %rd0, %rd2; atom.global.add.u32 %r1, [%rd1], 1;",
     1 << 30, "unmapped"),
    ("mov.u64 %rd1, 0x5000000000000; ld.u32 %r1, [%rd1];", 0, "unmapped"),
])
def test_out_of_bounds_and_misaligned_fault(op, off, what):
    dev = Device()
    p = dev.alloc(64)
    with pytest.raises(KernelFault) as ei:
        dev.launch(load_module(BAD.replace("{op}", op)), "k", (1,), (1,), p, off)
    assert ei.value.errno == errno.EFAULT
    assert what in str(ei.value) and "line" in str(ei.value)
