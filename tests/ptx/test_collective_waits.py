"""A warp collective waits for its warp mates that are elsewhere (executor.py's _runnable,
prelude.h's runnable): a shfl.sync names them in its member mask, and a GPU waits for them
to arrive.  nvcc places a cold branch (``if (lane == 0) atomicAdd(...)`` in a loop) after
the loop, so plain min-PC scheduling would run the other 31 lanes around the loop and into
the next shuffle while lane 0 is still at the branch; NVIDIA's jacobiCudaGraphs diverged so."""

from __future__ import annotations

import numpy as np

from gdevd.gpu.ptx import load_module

from .helpers import Device

PTX = """
.version 7.0
.target sm_75
.address_size 64
.visible .entry k(.param .u64 out, .param .u32 rounds)
{
  .reg .b32 %lane, %v, %s, %acc, %i, %n, %t;
  .reg .pred %p, %q;
  .reg .b64 %o, %a;
  ld.param.u64 %o, [out];
  ld.param.u32 %n, [rounds];
  mov.u32 %t, %tid.x;
  and.b32 %lane, %t, 31;
  mov.u32 %v, %lane;
  mov.u32 %acc, 0;
  mov.u32 %i, 0;
top:
  shfl.sync.idx.b32 %s, %v, 0, 31, -1;
  add.u32 %acc, %acc, %s;
  setp.eq.u32 %p, %lane, 0;
  @%p bra side;
join:
  add.u32 %i, %i, 1;
  setp.lt.u32 %q, %i, %n;
  @%q bra top;
  mul.wide.u32 %a, %t, 4;
  add.u64 %a, %o, %a;
  st.global.u32 [%a], %acc;
  ret;
side:
  add.u32 %v, %v, 100;
  bra.uni join;
}
"""


def _run(threads: int, rounds: int) -> list[int]:
    dev = Device()
    out = dev.put(np.zeros(threads, np.uint32))
    dev.launch(load_module(PTX, "collective_waits"), "k", (2, 1, 1), (threads, 1, 1),
               out, rounds)
    return dev.get(out, threads, np.uint32).tolist()


def test_a_shuffle_waits_for_the_lane_on_the_cold_branch() -> None:
    # round r reads lane 0's value after r visits to `side`: 0 + 100 + 200 + 300
    assert _run(32, 4) == [600] * 32


def test_every_warp_of_a_block_waits_for_its_own_mates() -> None:
    assert _run(96, 3) == [300] * 96


def test_a_partial_last_warp_waits_too() -> None:
    assert _run(40, 5) == [1000] * 40


SPIN = """
.version 7.0
.target sm_75
.address_size 64
.visible .entry k(.param .u64 out)
{
  .shared .u32 flag;
  .reg .b32 %lane, %s, %f, %t;
  .reg .pred %p, %q;
  .reg .b64 %o, %a;
  ld.param.u64 %o, [out];
  mov.u32 %t, %tid.x;
  and.b32 %lane, %t, 31;
  setp.ne.u32 %p, %lane, 0;
  @%p bra work;
spin:
  ld.volatile.shared.u32 %f, [flag];
  setp.eq.u32 %q, %f, 0;
  @%q bra spin;
  mov.u32 %s, %f;
  bra.uni done;
work:
  shfl.sync.idx.b32 %s, %lane, 1, 31, 0xfffffffe;
  st.volatile.shared.u32 [flag], 77;
done:
  mul.wide.u32 %a, %t, 4;
  add.u64 %a, %o, %a;
  st.global.u32 [%a], %s;
  ret;
}
"""


def test_a_mate_outside_the_member_mask_that_waits_on_the_collective_is_not_waited_for():
    # lane 0 spins until lanes 1..31 have shuffled (their mask leaves it out): the
    # collective gives up waiting for it after DEFER_MAX picks, as a GPU would not wait
    dev = Device()
    out = dev.put(np.zeros(32, np.uint32))
    dev.launch(load_module(SPIN, "collective_spin"), "k", (1, 1, 1), (32, 1, 1), out)
    assert dev.get(out, 32, np.uint32).tolist() == [77] + [1] * 31
