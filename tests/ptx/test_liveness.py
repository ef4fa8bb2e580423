"""Live registers of a kernel's blocks, and which registers a compiled lane loop may keep as
its own variables (jit/liveness.py); the kernels' results on both engines are checked by
every other test of tests/ptx."""

from __future__ import annotations

import numpy as np

from gdevd.gpu.ptx import load_module
from gdevd.gpu.ptx.jit.liveness import live_sets, promote, zeroed_at_start

from .helpers import Device

CT = ["uint32_t"] * 8


def test_a_register_only_one_loop_writes_then_reads_becomes_its_variable():
    parts = ["LOOP(R1[i] = 7; R2[i] = R1[i] + 1;);", "LOOP(R3[i] = R2[i];);"]
    out = promote(parts, "", {1, 2, 3}, CT)
    assert out[0] == "LOOP(uint32_t r1_; r1_ = 7; R2[i] = r1_ + 1;);"
    assert out[1] == "LOOP(uint32_t r3_; r3_ = R2[i];);"       # R2 spans two loops


def test_registers_live_at_entry_or_exit_or_read_elsewhere_keep_their_arrays():
    parts = ["{ uint32_t bad1_ = 0; LOOP(R1[i] = R4[i]; R2[i] = R1[(i + 1) & 31];); }",
             "{ const int x_ = xlate(c, full, na, 0, 4, 4, 1); if (x_) CLOOP(4, { R5[i] = 1; })"
             " else LOOP({ R5[i] = 1; }); }"]
    term = "{ int cnt_ = 0; LOOP(cnt_ += R6[i] != 0;); }"
    parts.append("LOOP(R6[i] = 1;);")
    parts.append("{ uint32_t t_ = 0; LOOP(t_ += R2[i];); LOOP(R7[i] = t_;); }")   # 2nd loop
    # R1: another lane's read; R4: live; R5: an access, not a plain loop; R6: read by the
    # terminator
    assert promote(parts, term, {1, 5, 6, 7}, CT) == parts


def test_a_guarded_write_does_not_kill_so_the_old_value_stays_live():
    text = """.version 7.5
.target sm_75
.address_size 64
.visible .entry k(.param .u64 out)
{
.reg .pred %p<2>; .reg .b32 %r<4>; .reg .b64 %rd<3>;
mov.u32 %r0, %tid.x;
setp.lt.u32 %p1, %r0, 4;
@%p1 mov.u32 %r1, 9;
add.u32 %r2, %r1, 1;
ld.param.u64 %rd0, [out];
mul.wide.u32 %rd1, %r0, 4;
add.s64 %rd2, %rd0, %rd1;
st.global.u32 [%rd2], %r2;
ret;
}
"""
    mod = load_module(text)
    info = mod.kernels["k"]
    live_in, _ = live_sets(info.blocks)
    held = {name for name in info.regs if name in zeroed_at_start(info.blocks)}
    assert held and held <= live_in[0]
    dev = Device()
    out = dev.alloc(4 * 8)
    dev.launch(mod, "k", (1,), (8,), out)
    assert dev.get(out, 8, np.uint32).tolist() == [10] * 4 + [1] * 4
