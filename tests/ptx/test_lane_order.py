"""The order lanes see each other's memory accesses, page-crossing and partial lane sets,
and registers read before written: the interpreter's results, which the compiling engine
(it groups instructions into lane loops and translates addresses chunk by chunk) must
reproduce (conftest.py runs every test on both engines)."""

from __future__ import annotations

import errno

import numpy as np
import pytest

from gdevd.errors import KernelFault
from gdevd.gpu.ptx import load_module

from .helpers import Device

HEAD = ".version 7.5\n.target sm_75\n.address_size 64\n"

NEIGHBOURS = HEAD + """
.visible .entry k(.param .u64 dst)
{
.reg .b32 %r<8>; .reg .b64 %rd<4>;
.shared .align 4 .b32 sm[65];
mov.u32 %r0, %tid.x;
mov.u32 %r1, sm;
shl.b32 %r2, %r0, 2;
add.s32 %r3, %r1, %r2;
add.s32 %r4, %r0, 100;
st.shared.u32 [%r3], %r4;
ld.shared.u32 %r5, [%r3+4];
st.shared.u32 [%r3+4], %r0;
ld.shared.u32 %r6, [%r3];
ld.param.u64 %rd0, [dst];
cvta.to.global.u64 %rd0, %rd0;
mul.wide.u32 %rd1, %r0, 8;
add.s64 %rd2, %rd0, %rd1;
st.global.v2.u32 [%rd2], {%r5, %r6};
ret;
}
"""


def test_every_lane_finishes_a_shared_access_before_any_lane_starts_the_next():
    dev = Device()
    out = dev.alloc(64 * 8)
    dev.launch(load_module(NEIGHBOURS), "k", (1,), (64,), out)
    got = dev.get(out, 128, np.uint32).reshape(64, 2)
    t = np.arange(64)
    assert got[:, 0].tolist() == [*(t[:-1] + 101), 0]      # the neighbour's store, not 0
    assert got[:, 1].tolist() == [100, *t[:-1]]             # the neighbour's second store


COPY = HEAD + """
.visible .entry k(.param .u64 src, .param .u64 dst, .param .u32 n, .param .u32 mul)
{
.reg .pred %p<2>; .reg .b32 %r<8>; .reg .b64 %rd<8>;
mov.u32 %r0, %tid.x;
mov.u32 %r1, %ctaid.x;
mov.u32 %r2, %ntid.x;
mad.lo.s32 %r3, %r1, %r2, %r0;
ld.param.u32 %r4, [n];
setp.ge.u32 %p1, %r3, %r4;
@%p1 bra DONE;
ld.param.u32 %r5, [mul];
mul.lo.s32 %r6, %r3, %r5;
ld.param.u64 %rd0, [src];
ld.param.u64 %rd1, [dst];
mul.wide.u32 %rd2, %r6, 4;
add.s64 %rd3, %rd0, %rd2;
ld.global.u32 %r7, [%rd3];
mul.wide.u32 %rd4, %r3, 4;
add.s64 %rd5, %rd1, %rd4;
st.global.u32 [%rd5], %r7;
DONE:
ret;
}
"""


@pytest.mark.parametrize("n,block,stride", [(1000, 40, 1), (3000, 256, 1), (500, 96, 3),
                                            (2000, 64, 1024)])
def test_copies_across_pages_with_partial_blocks(n, block, stride):
    dev = Device()
    src = np.arange(n * stride, dtype=np.uint32) * 7 + 1
    dev.alloc(4096 - 256)           # the source starts 256 bytes before a page boundary
    ps, pd = dev.put(src), dev.alloc(4 * n)
    assert ps % 4096 == 4096 - 256
    dev.launch(load_module(COPY), "k", (-(-n // block),), (block,), ps, pd, n, stride)
    assert np.array_equal(dev.get(pd, n, np.uint32), src[::stride][:n])


def test_first_faulting_lane_of_a_chunk_is_reported():
    dev = Device()
    dst = dev.alloc(4 * 64)
    # lane k reads src + 4 * k * mul; with mul = 1024 lanes 0..3 are mapped, lane 4 is not
    top = dev.BASE + dev.size
    with pytest.raises(KernelFault) as ei:
        dev.launch(load_module(COPY), "k", (1,), (64,), top - 4 * 4096, dst, 64, 1024)
    assert ei.value.errno == errno.EFAULT
    assert f"illegal address {top:#x} (unmapped)" in str(ei.value)
    assert "line 21" in str(ei.value)


UNSET = HEAD + """
.visible .entry k(.param .u64 dst)
{
.reg .b32 %r<4>; .reg .b64 %rd<4>;
add.u32 %r1, %r1, 1;
mov.u32 %r0, %ctaid.x;
ld.param.u64 %rd0, [dst];
mul.wide.u32 %rd1, %r0, 4;
add.s64 %rd2, %rd0, %rd1;
mov.u32 %r2, %tid.x;
setp.eq.u32 %p0, %r2, 0;
st.global.u32 [%rd2], %r1;
ret;
}
"""


def test_a_register_read_before_written_is_zero_in_every_block():
    dev = Device()
    out = dev.alloc(4 * 40)
    text = UNSET.replace("setp.eq.u32 %p0, %r2, 0;\n", "")
    dev.launch(load_module(text), "k", (40,), (32,), out)
    assert dev.get(out, 40, np.uint32).tolist() == [1] * 40


def test_a_launch_after_a_faulted_one_of_the_same_shape_starts_clean():
    dev = Device()
    # the source pointer is read in the first basic block, the fault is in the second
    text = COPY.replace("ld.param.u64 %rd0, [src];\n", "").replace(
        "mov.u32 %r0, %tid.x;", "ld.param.u64 %rd0, [src];\nmov.u32 %r0, %tid.x;")
    mod = load_module(text)
    src = np.arange(64 * 64, dtype=np.uint32)
    ps, pd = dev.put(src), dev.alloc(4 * 64 * 64)
    top = dev.BASE + dev.size
    with pytest.raises(KernelFault):     # blocks stop part-way, at the unmapped lane
        dev.launch(mod, "k", (64,), (64,), top - 8 * 4096, pd, 64 * 64, 1024)
    dev.launch(mod, "k", (64,), (64,), ps, pd, 64 * 64, 1)
    assert np.array_equal(dev.get(pd, 64 * 64, np.uint32), src)


BLOCKWISE = HEAD + """
.visible .entry k()
{
.reg .pred %p<2>; .reg .b32 %r<4>; .reg .b64 %rd<2>;
mov.u32 %r0, %ctaid.x;
setp.eq.u32 %p1, %r0, 0;
@%p1 bra DONE;
mul.wide.u32 %rd0, %r0, 256;
st.global.u32 [%rd0], %r0;
DONE:
ret;
}
"""


def test_when_several_blocks_fault_the_lowest_faulting_block_is_reported():
    # every block but the first stores to 256 * its index (unmapped); the compiled engine
    # runs blocks 1 and 8 in different chunks, and must still name block 1's address
    with pytest.raises(KernelFault) as ei:
        Device().launch(load_module(BLOCKWISE), "k", (64,), (32,))
    assert "illegal address 0x100 (unmapped)" in str(ei.value)
