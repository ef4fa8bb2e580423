"""A shfl whose source lane does not execute it reads 0, on both engines (ops_warp.py): CUDA
leaves the value undefined, and NVIDIA's reduction sample (reduce7, its default kernel) sums
its last warp with a partial member mask, counting on the missing lanes adding nothing."""

from __future__ import annotations

import numpy as np

from gdevd.gpu.ptx import load_module

from .helpers import Device

PTX = """
.version 7.0
.target sm_75
.address_size 64
.visible .entry k(.param .u64 out, .param .u32 delta)
{
  .reg .b32 %t, %v, %s, %d;
  .reg .pred %p, %q;
  .reg .b64 %o, %a;
  ld.param.u64 %o, [out];
  ld.param.u32 %d, [delta];
  mov.u32 %t, %tid.x;
  add.u32 %v, %t, 100;
  setp.ge.u32 %p, %t, 8;
  @%p bra skip;
  shfl.sync.down.b32 %s|%q, %v, %d, 31, 255;
  bra.uni store;
skip:
  mov.u32 %s, 7;
store:
  mul.wide.u32 %a, %t, 4;
  add.u64 %a, %o, %a;
  st.global.u32 [%a], %s;
  ret;
}
"""


def _run(delta: int) -> list[int]:
    dev = Device()
    out = dev.put(np.zeros(64, np.uint32))
    dev.launch(load_module(PTX, "shfl_inactive"), "k", (1, 1, 1), (64, 1, 1), out, delta)
    return dev.get(out, 64, np.uint32).tolist()


def test_source_lanes_that_diverged_read_zero() -> None:
    got = _run(16)
    assert got[:8] == [0] * 8                       # lanes 16..23 are at `skip`
    assert got[8:] == [7] * 56


def test_executing_source_lanes_are_read_and_the_rest_read_zero() -> None:
    got = _run(4)
    assert got[:8] == [104, 105, 106, 107, 0, 0, 0, 0]   # lanes 8..11 do not execute it
    assert got[32:40] == [7] * 8                          # the second warp all skipped it


def test_a_partial_mask_warp_sum_adds_only_its_lanes() -> None:
    """reduce7's last step: lanes 0..7 sum their values with offsets 16, 8, 4, 2, 1."""
    text = PTX.replace("shfl.sync.down.b32 %s|%q, %v, %d, 31, 255;", "\n  ".join(
        f"shfl.sync.down.b32 %s|%q, %v, {o}, 31, 255; add.u32 %v, %v, %s;"
        for o in (16, 8, 4, 2, 1)) + "\n  mov.u32 %s, %v;")
    dev = Device()
    out = dev.put(np.zeros(64, np.uint32))
    dev.launch(load_module(text, "partial"), "k", (1, 1, 1), (64, 1, 1), out, 0)
    assert dev.get(out, 1, np.uint32)[0] == sum(range(100, 108))
