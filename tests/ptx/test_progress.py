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


# Half a warp loops while the other half waits at a shuffle of the whole warp: the shuffle
# must see the loopers' final values.  The scheduler's forward-progress step (every 64th
# divergent step, the threads furthest ahead) once ran the shuffle for the waiting half
# alone, reading the loopers' registers mid-loop (thrust::sort came out unsorted).
WARP_WAIT = """
.version 7.0
.target sm_75
.address_size 64

.visible .entry warp_wait(.param .u64 out, .param .u32 iters)
{
    .reg .pred %p<3>;
    .reg .b32 %r<11>;
    .reg .b64 %rd<4>;
    mov.u32 %r1, %tid.x;
    mov.u32 %r8, %ctaid.x;
    mov.u32 %r9, %ntid.x;
    mad.lo.u32 %r10, %r8, %r9, %r1;
    ld.param.u32 %r6, [iters];
    mov.u32 %r2, %r1;
    and.b32 %r7, %r1, 31;
    setp.ge.u32 %p1, %r7, 16;
    @%p1 bra DONE;
    mov.u32 %r3, 0;
LOOP:
    add.u32 %r2, %r2, %r3;
    add.u32 %r3, %r3, 1;
    setp.lt.u32 %p2, %r3, %r6;
    @%p2 bra LOOP;
DONE:
    xor.b32 %r4, %r7, 16;
    shfl.sync.idx.b32 %r5, %r2, %r4, 31, -1;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r10, 4;
    add.u64 %rd2, %rd2, %rd3;
    st.global.u32 [%rd2], %r5;
    ret;
}
"""


@pytest.mark.parametrize(("blocks", "tpb"), [(1, 32), (3, 64), (2, 48)])
def test_a_warp_collective_waits_for_the_warp_mates_behind(blocks, tpb):
    from gdevd.gpu.ptx import load_module
    dev, mod = Device(), load_module(WARP_WAIT, "warp_wait")
    iters = 300
    out = dev.alloc(4 * blocks * tpb)
    launch = dev.prepare(mod, "warp_wait", (blocks,), (tpb,), out, iters, watchdog=60)
    while not launch.run(7):
        pass
    tid = np.tile(np.arange(tpb), blocks)
    lane = tid % 32
    v = np.where(lane < 16, tid + iters * (iters - 1) // 2, tid)      # each lane's final value
    src = (tid - lane) + (lane ^ 16)                                  # the lane it reads
    want = np.where(src < tpb, v.reshape(blocks, tpb)[:, np.minimum(src[:tpb], tpb - 1)].ravel(),
                    0)
    got = dev.get(out, blocks * tpb, np.uint32).astype(np.int64)
    valid = src < tpb
    assert (got[valid] == want[valid]).all()
