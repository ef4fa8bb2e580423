"""Control flow on hand-written PTX: predicated exit/ret, guarded stores, loops whose trip
count differs per thread, barriers after divergence, predicated trap, budgeted runs."""

from __future__ import annotations

import errno

import numpy as np
import pytest

from gdevd.errors import KernelFault
from gdevd.gpu.ptx import load_module

from .helpers import Device

HEAD = ".version 7.5\n.target sm_75\n.address_size 64\n"

LOOP = HEAD + """
.visible .entry k(.param .u64 out)
{
.reg .b32 %r<8>; .reg .b64 %rd<4>; .reg .pred %p<4>;
mov.u32 %r0, %tid.x;
ld.param.u64 %rd0, [out];
mul.wide.u32 %rd1, %r0, 4;
add.s64 %rd1, %rd0, %rd1;
st.global.u32 [%rd1], 999;
and.b32 %r1, %r0, 7;
setp.eq.u32 %p0, %r1, 7;
@%p0 exit;                       // every 8th thread leaves at once
mov.u32 %r2, 0;
mov.u32 %r3, 0;
$Lloop:
add.u32 %r3, %r3, %r2;
add.u32 %r2, %r2, 1;
setp.lt.u32 %p1, %r2, %r0;       // trip count = tid
@%p1 bra.uni $Lloop;
setp.gt.u32 %p2, %r3, 100;
@%p2 st.global.u32 [%rd1], %r3;  // guarded store
@!%p2 st.global.u32 [%rd1], 0;
bar.sync 0;                      // after divergence, without the exited threads
setp.eq.u32 %p3, %r0, 5;
@%p3 ret;
st.global.u32 [%rd1+512], %r0;
ret;
}
"""


def _expected():
    out = np.zeros(256, np.int64)
    for t in range(128):
        if t % 8 == 7:
            out[t] = 999
            continue
        s = sum(range(max(t, 1)))
        out[t] = s if s > 100 else 0
        out[128 + t] = 0 if t == 5 else t
    return out


@pytest.mark.parametrize("budget", [None, 1, 3, 17])
def test_predicated_exit_loops_guards_barrier(budget):
    dev = Device()
    po = dev.put(np.zeros(256, np.int32))
    dev.launch(load_module(LOOP), "k", (1,), (128,), po, budget_steps=budget)
    assert dev.get(po, 256, np.int32).tolist() == _expected().tolist()


TRAP = HEAD + """
.visible .entry k(.param .u32 bad)
{
.reg .b32 %r<3>; .reg .pred %p<2>;
mov.u32 %r0, %tid.x;
ld.param.u32 %r1, [bad];
setp.eq.u32 %p0, %r0, %r1;
@%p0 trap;
ret;
}
"""


def test_predicated_trap_only_when_taken():
    dev = Device()
    mod = load_module(TRAP)
    dev.launch(mod, "k", (2,), (32,), 1000)          # no thread matches: runs to completion
    with pytest.raises(KernelFault) as ei:
        dev.launch(mod, "k", (2,), (32,), 17)
    assert ei.value.errno == errno.EIO and "line 11" in str(ei.value)


def test_budget_returns_false_until_done_and_counts():
    dev = Device()
    po = dev.put(np.zeros(256, np.int32))
    launch = dev.prepare(load_module(LOOP), "k", (1,), (128,), po)
    assert launch.run(budget=0) is False and launch.stats.instructions == 0
    steps = 0
    while not launch.run(budget=5):
        steps += 1
    assert steps > 10
    assert launch.stats.instructions > 5 * steps
    assert launch.stats.thread_instructions > launch.stats.instructions
    assert launch.run(budget=5) is True
