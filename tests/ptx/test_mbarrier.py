"""``mbarrier`` (sm_80/sm_90 split arrive/wait barriers in shared memory), the
``cp.async.mbarrier.arrive`` forms and ``elect.sync`` on both engines: phases, tokens,
parity, pending counts, counts and ``arrive_drop``, ``expect_tx``/``complete_tx``,
producers and consumers in different warps that spin on ``try_wait`` (in both program
orders, so a spinning warp at the lower PC must not starve the arriving one), faults."""

from __future__ import annotations

import numpy as np
import pytest

from gdevd.errors import KernelFault
from gdevd.gpu.ptx import load_module
from gdevd.gpu.ptx.errors import PtxError

from .isa import kernel_text, run_snippet

SH = (".shared .align 8 .b64 bar[2]; .shared .align 8 .b64 bar2; .shared .align 16 .b32 buf[64];"
      ".reg .b64 %t<8>; .reg .b32 %q<16>; .reg .pred %c<4>;")
# %q1: this thread's index in its block; %q2: &bar (32-bit shared); %q3: &buf[tid]
PRE = ("mov.u32 %q1, %tid.x; mov.u32 %q2, bar; mov.u32 %q3, buf; shl.b32 %q4, %q1, 2;"
       "add.u32 %q3, %q3, %q4; setp.eq.u32 %c0, %q1, 0;")


def _run(engine: str, body: str, n: int = 64, block: int = 64) -> np.ndarray:
    """Run PRE + body (one thread per element of a block-sized input) and return %y."""
    text = kernel_text(["u32"], "u32", PRE + body, SH)
    if engine == "jit":
        mod = load_module(text, "mbar")
        mod.start_compile(wait=True)
        assert mod.jit.engine_of("k") == "jit", mod.jit.compiled.rejected
    return run_snippet(PRE + body, [("u32", np.arange(n))], "u32", block=block, extra_regs=SH)


def _init(count: str) -> str:
    return f"@%c0 mbarrier.init.shared.b64 [%q2], {count}; bar.sync 0;"


def test_tokens_carry_the_pending_count_and_the_phase(engine):
    # lanes arrive in lane order: lane k leaves 63 - k pending; the last completes phase 0
    body = _init(64) + ("mbarrier.arrive.shared.b64 %t1, [%q2];"
                        "mbarrier.pending_count.b64 %q5, %t1;"
                        "mbarrier.test_wait.shared.b64 %c1, [%q2], %t1;"
                        "mbarrier.test_wait.parity.shared.b64 %c2, [%q2], 0;"
                        "mbarrier.test_wait.parity.shared.b64 %c3, [%q2], 1;"
                        "selp.u32 %q6, 1000, 0, %c1; selp.u32 %q7, 2000, 0, %c2;"
                        "selp.u32 %q8, 4000, 0, %c3; add.u32 %y, %q5, %q6; add.u32 %y, %y, %q7;"
                        "add.u32 %y, %y, %q8; shr.u64 %t2, %t1, 63; cvt.u32.u64 %q9, %t2;"
                        "mad.lo.u32 %y, %q9, 10000, %y;")
    got = _run(engine, body, n=128)      # two blocks, each with its own barrier
    want = (63 - np.arange(64)) + 1000 + 2000
    assert np.array_equal(got, np.tile(want, 2))


def test_a_phase_waits_for_every_expected_arrival(engine):
    # 64 expected; only the first 32 threads arrive: the phase stays open
    body = _init(64) + ("setp.lt.u32 %c1, %q1, 32; @%c1 mbarrier.arrive.shared.b64 %t1, [%q2];"
                        "bar.sync 0; mbarrier.test_wait.parity.shared.b64 %c2, [%q2], 0;"
                        "ld.shared.u64 %t3, [%q2]; cvt.u32.u64 %q5, %t3; and.b32 %q5, %q5, 0xfffff;"
                        "selp.u32 %q6, 100, 0, %c2; add.u32 %y, %q5, %q6;")
    assert np.array_equal(_run(engine, body), np.full(64, 32))


def test_counts_drops_and_the_next_phases(engine):
    # phase 0: threads >= 32 arrive_drop, threads < 32 arrive with count 1 twice via count 2
    # on even lanes and 0 on odd ones; phase 1 then expects 32 only
    body = _init(64) + (
        "setp.ge.u32 %c1, %q1, 32; @%c1 mbarrier.arrive_drop.shared.b64 _, [%q2];"
        "and.b32 %q5, %q1, 1; setp.eq.u32 %c2, %q5, 0; @!%c1 bra LOW; bra PH1;"
        "LOW: @%c2 mbarrier.arrive.shared::cta.b64 %t1, [%q2], 2;"
        "PH1: bar.sync 0; mbarrier.test_wait.parity.shared.b64 %c3, [%q2], 0;"
        "selp.u32 %q6, 1, 0, %c3;"
        "@!%c1 mbarrier.arrive.release.cta.shared.b64 %t2, [%q2];"
        "bar.sync 0; mbarrier.test_wait.parity.shared.b64 %c3, [%q2], 1;"
        "selp.u32 %q7, 2, 0, %c3; add.u32 %y, %q6, %q7;"
        "bar.sync 0; @%c0 mbarrier.inval.shared.b64 [%q2]; bar.sync 0;"
        "ld.shared.u64 %t3, [%q2]; cvt.u32.u64 %q8, %t3; add.u32 %y, %y, %q8;")
    assert np.array_equal(_run(engine, body), np.full(64, 3))


def test_transaction_counts_hold_a_phase_open(engine):
    body = _init(1) + (
        "@%c0 mbarrier.arrive.expect_tx.shared.b64 %t1, [%q2], 16; bar.sync 0;"
        "mbarrier.test_wait.parity.shared.b64 %c1, [%q2], 0; selp.u32 %q5, 1, 0, %c1;"
        "bar.sync 0; @%c0 mbarrier.complete_tx.shared.b64 [%q2], 6; bar.sync 0;"
        "mbarrier.test_wait.parity.shared.b64 %c1, [%q2], 0; selp.u32 %q6, 2, 0, %c1;"
        "bar.sync 0; @%c0 mbarrier.complete_tx.shared.b64 [%q2], 10; bar.sync 0;"
        "mbarrier.test_wait.parity.shared.b64 %c1, [%q2], 0; selp.u32 %q7, 4, 0, %c1;"
        "@%c0 mbarrier.expect_tx.shared.b64 [%q2], 8; bar.sync 0;"
        "add.u32 %y, %q5, %q6; add.u32 %y, %y, %q7;")
    assert np.array_equal(_run(engine, body), np.full(64, 4))


_PRODUCE = ("PROD: mov.u32 %q5, 0; DELAY: add.u32 %q5, %q5, 1; setp.lt.u32 %c2, %q5, %q1;"
            "@%c2 bra DELAY; st.shared.u32 [%q3+-128], %q1;"
            "mbarrier.arrive.shared.b64 _, [%q2]; mov.u32 %y, 7; bra DONE;")
_CONSUME = ("CONS: mbarrier.try_wait.parity.shared.b64 %c3, [%q2], 0, 1000; @!%c3 bra CONS;"
            "ld.shared.u32 %y, [%q3]; bra DONE;")
_ORDERS = {"producer_first": "@%c1 bra PROD; bra CONS;" + _PRODUCE + _CONSUME,
           # the spinning consumers sit at the lower PC: min-PC alone would starve PROD
           "consumer_first": "@%c1 bra PROD;" + _CONSUME + _PRODUCE}


@pytest.mark.parametrize("order", sorted(_ORDERS))
def test_consumers_spin_until_another_warp_arrives(engine, order):
    body = _init(32) + "setp.ge.u32 %c1, %q1, 32;" + _ORDERS[order] + "DONE:"
    assert np.array_equal(_run(engine, body), np.r_[np.arange(32, 64), np.full(32, 7)])


def test_full_empty_pipeline_across_warps(engine):
    # warp 1 produces 12 rounds into buf[0..31], warp 0 consumes; full = bar[0], empty = bar[1]
    body = ("@%c0 mbarrier.init.shared.b64 [%q2], 32; @%c0 mbarrier.init.shared.b64 [%q2+8], 32;"
            "bar.sync 0; and.b32 %q10, %q1, 31; shl.b32 %q11, %q10, 2; mov.u32 %q12, buf;"
            "add.u32 %q12, %q12, %q11; mov.u32 %q5, 0; mov.u32 %y, 0;"
            "setp.ge.u32 %c1, %q1, 32; @%c1 bra PROD;"
            "CONS: and.b32 %q6, %q5, 1; FULL: mbarrier.try_wait.parity.shared.b64 %c2, [%q2], %q6;"
            "@!%c2 bra FULL; ld.shared.u32 %q7, [%q12]; add.u32 %y, %y, %q7;"
            "mbarrier.arrive.shared.b64 _, [%q2+8]; add.u32 %q5, %q5, 1;"
            "setp.lt.u32 %c3, %q5, 12; @%c3 bra CONS; bra DONE;"
            "PROD: and.b32 %q6, %q5, 1; xor.b32 %q6, %q6, 1;"
            "EMPTY: mbarrier.try_wait.parity.shared.b64 %c2, [%q2+8], %q6; @!%c2 bra EMPTY;"
            "mad.lo.u32 %q7, %q5, 100, %q10; st.shared.u32 [%q12], %q7;"
            "mbarrier.arrive.shared.b64 _, [%q2]; add.u32 %q5, %q5, 1;"
            "setp.lt.u32 %c3, %q5, 12; @%c3 bra PROD; mov.u32 %y, 1; DONE:")
    lanes = np.arange(32)
    want = np.r_[sum(r * 100 + lanes for r in range(12)), np.ones(32)]
    assert np.array_equal(_run(engine, body), want)


@pytest.mark.parametrize("noinc", [True, False])
def test_cp_async_arrives_after_its_copies(engine, noinc):
    # every thread copies its neighbour's input into buf and arrives for its copies
    count, op = ("128", "cp.async.mbarrier.arrive.noinc.shared::cta.b64") if noinc else \
        ("64", "cp.async.mbarrier.arrive.shared.b64")
    body = _init(count) + (
        "xor.b32 %q5, %q1, 1; ld.param.u64 %t1, [in0]; mul.wide.u32 %t2, %q5, 4;"
        "add.u64 %t1, %t1, %t2; cp.async.ca.shared.global [%q3], [%t1], 4;"
        f"{op} [%q2]; mbarrier.arrive.shared.b64 %t3, [%q2];"
        "W: mbarrier.try_wait.shared.b64 %c1, [%q2], %t3; @!%c1 bra W;"
        "xor.b32 %q6, %q1, 3; shl.b32 %q6, %q6, 2; mov.u32 %q7, buf; add.u32 %q7, %q7, %q6;"
        "ld.shared.u32 %y, [%q7];")
    assert np.array_equal(_run(engine, body), np.arange(64) ^ 3 ^ 1)


def test_generic_addresses_reach_the_shared_window(engine):
    body = ("cvta.shared.u64 %t4, bar; @%c0 mbarrier.init.b64 [%t4], 64; bar.sync 0;"
            "mbarrier.arrive.b64 %t1, [%t4]; mbarrier.test_wait.b64 %c1, [%t4], %t1;"
            "selp.u32 %y, 5, 0, %c1;")
    assert np.array_equal(_run(engine, body), np.full(64, 5))


@pytest.mark.parametrize("addr,va,reason", [("[%q2+4]", 4, "misaligned"),
                                            ("[%q2+4096]", 4096, "out-of-bounds shared")])
def test_a_bad_mbarrier_address_faults(engine, addr, va, reason):
    # bar is at shared offset 0; the fault names the kernel, the address and the PTX line
    body = f"mbarrier.arrive.shared.b64 %t1, {addr}; mov.u32 %y, 0;"
    text = rf"illegal address {va:#x} \({reason}\) in k at line \d+"
    with pytest.raises(KernelFault, match=text):
        _run(engine, body)


def test_an_mbarrier_outside_shared_memory_faults(engine):
    body = "ld.param.u64 %t1, [in0]; mbarrier.init.b64 [%t1], 1; mov.u32 %y, 0;"
    with pytest.raises(KernelFault, match="out-of-bounds shared"):
        _run(engine, body)


@pytest.mark.parametrize("form", ["mbarrier.arrive.shared.b32 %t1, [%q2];",
                                  "mbarrier.sleep.shared.b64 %t1, [%q2];",
                                  "mbarrier.init.shared.b64 %t1, 4;"])
def test_malformed_mbarriers_are_refused_at_load(form):
    with pytest.raises(PtxError):
        load_module(kernel_text(["u32"], "u32", PRE + form + "mov.u32 %y, 0;", SH), "bad")


def test_elect_picks_the_lowest_member_of_each_warp(engine):
    # lanes with tid % 3 == 1 execute; the mask excludes the warp's lanes 0-7
    body = ("rem.u32 %q5, %q1, 3; setp.eq.u32 %c1, %q5, 1; mov.u32 %y, 99; @!%c1 bra DONE;"
            "elect.sync %q6|%c2, 0xffffff00; selp.u32 %q7, 1000, 0, %c2; add.u32 %y, %q6, %q7;"
            "DONE:")
    got = _run(engine, body)
    want = np.full(64, 99)
    for w in (0, 32):
        lanes = [t for t in range(w, w + 32) if t % 3 == 1]
        leader = min(t - w for t in lanes if t - w >= 8)
        for t in lanes:
            want[t] = leader + (1000 if t - w == leader else 0)
    assert np.array_equal(got, want)
