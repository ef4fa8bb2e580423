"""Global loads whose lanes' addresses follow each pattern the compiling engine translates
differently (``xlate`` in jit/xlate.h): consecutive chunks (one check and a vector access),
a consecutive prefix then a gather (the prefix, translated by its first lane only, is
completed), broadcasts, chunks straddling pages, faults in any of them.  The interpreter's
results are the reference (conftest.py runs every test on both engines)."""

from __future__ import annotations

import errno

import numpy as np
import pytest

from gdevd.errors import KernelFault
from gdevd.gpu.ptx import load_module

from .helpers import Device

# dst[i] = src[idx[i]], i the global thread index (no bounds check: idx decides)
GATHER = """.version 7.5
.target sm_75
.address_size 64
.visible .entry k(.param .u64 src, .param .u64 idx, .param .u64 dst)
{
.reg .b32 %r<8>; .reg .b64 %rd<10>;
mov.u32 %r0, %tid.x;
mov.u32 %r1, %ctaid.x;
mov.u32 %r2, %ntid.x;
mad.lo.s32 %r3, %r1, %r2, %r0;
ld.param.u64 %rd0, [src];
ld.param.u64 %rd1, [idx];
ld.param.u64 %rd2, [dst];
mul.wide.u32 %rd3, %r3, 4;
add.s64 %rd4, %rd1, %rd3;
ld.global.u32 %r4, [%rd4];
mul.wide.s32 %rd5, %r4, 4;
add.s64 %rd6, %rd0, %rd5;
ld.global.u32 %r5, [%rd6];
add.s64 %rd7, %rd2, %rd3;
st.global.u32 [%rd7], %r5;
ret;
}
"""
N = 4096     # four pages of u32 per array


def _patterns() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    ident = np.arange(N)
    mixed = ident.copy()
    mixed[40:56] = mixed[40:56][::-1]          # chunk 2 of block 0 reversed
    mixed[300:301] = 5                          # one lane of a late chunk elsewhere
    strided = (ident * 1024) % N + ident // 4   # every lane on another page
    offset = (ident + 1000) % N                 # consecutive runs crossing pages mid-chunk
    return {"identity": ident, "mixed": mixed, "broadcast": np.full(N, 77),
            "per-row broadcast": ident // 16 * 16, "strided": strided, "offset": offset,
            "random": rng.integers(0, N, N)}


@pytest.mark.parametrize("block", [64, 256, 40])
@pytest.mark.parametrize("name", list(_patterns()))
def test_every_address_pattern_loads_what_the_lanes_name(name, block):
    idx = _patterns()[name].astype(np.int32)
    dev = Device()
    src = np.arange(N, dtype=np.uint32) * 3 + 1
    ps, pi, pd = dev.put(src), dev.put(idx), dev.alloc(4 * N)
    grid = N // block                           # whole blocks only (40: 4080 lanes)
    dev.launch(load_module(GATHER), "k", (grid,), (block,), ps, pi, pd)
    n = grid * block
    assert np.array_equal(dev.get(pd, n, np.uint32), src[idx[:n]])


@pytest.mark.parametrize("lane", [0, 17, 37, 63])
def test_the_first_faulting_lane_is_reported_in_a_consecutive_run(lane):
    idx = np.arange(64, dtype=np.int32)
    idx[lane] = 1 << 28                          # far past the end of device memory
    idx[lane + 1:] += 1 << 29                    # later lanes fault too, further away
    dev = Device()
    src = np.arange(64, dtype=np.uint32)
    ps, pi, pd = dev.put(src), dev.put(idx), dev.alloc(4 * 64)
    with pytest.raises(KernelFault) as ei:
        dev.launch(load_module(GATHER), "k", (1,), (64,), ps, pi, pd)
    assert ei.value.errno == errno.EFAULT
    assert f"illegal address {ps + 4 * (1 << 28):#x} (unmapped)" in str(ei.value)
