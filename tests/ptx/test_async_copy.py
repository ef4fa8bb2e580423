"""``cp.async`` (sm_80's asynchronous global-to-shared copy, lowered by
gdevd/gpu/ptx/lower.py to loads and stores) on both engines: whole copies of 4, 8 and
16 bytes, immediate and register src-sizes (zero fill; bytes past src-size never read),
the ignore-src predicate, a guarded copy, cache hints, and malformed forms rejected."""

from __future__ import annotations

import numpy as np
import pytest

from gdevd.errors import KernelFault
from gdevd.gpu.ptx import load_module
from gdevd.gpu.ptx.errors import PtxError

from .isa import kernel_text, run_snippet

N = 64
SH = ".shared .align 16 .b8 sh[1024];"
# %r2: this thread's 16 shared bytes (a 32-bit shared address, as nvcc writes it),
# %rd1: its 16 bytes of in1
PRE = ("mov.u32 %r1, %tid.x; mov.u32 %r2, sh; shl.b32 %r3, %r1, 4; add.u32 %r2, %r2, %r3;"
       "st.shared.v4.u32 [%r2], {%r1, %r1, %r1, %r1};"
       "ld.param.u64 %rd1, [in1]; mul.wide.u32 %rd2, %gid, 16; add.u64 %rd1, %rd1, %rd2;")


def _run(engine: str, copy: str, word: int, limits=None) -> np.ndarray:
    body = PRE + copy + (" cp.async.commit_group; cp.async.wait_group 0; bar.sync 0;"
                         f" ld.shared.u32 %y, [%r2+{4 * word}];")
    lim = np.zeros(N, np.uint32) if limits is None else limits
    src = np.arange(1, 4 * N + 1, dtype=np.uint32) * np.uint32(0x01010101)
    if engine == "jit":
        mod = load_module(kernel_text(["u32", "u32"], "u32", body, SH), "cpasync")
        mod.start_compile(wait=True)
        assert mod.jit.engine_of("k") == "jit", mod.jit.compiled.rejected
    return run_snippet(body, [("u32", lim), ("u32", src)], "u32", extra_regs=SH)


def _src_word(word: int) -> np.ndarray:
    return (np.arange(N) * 4 + word + 1).astype(np.uint32) * np.uint32(0x01010101)


@pytest.mark.parametrize("op,size", [("cp.async.ca.shared.global", 4),
                                     ("cp.async.ca.shared.global", 8),
                                     ("cp.async.ca.shared.global", 16),
                                     ("cp.async.cg.shared::cta.global.L2::128B", 16)])
def test_whole_copies(engine, op, size):
    for word in range(4):
        got = _run(engine, f"{op} [%r2], [%rd1], {size};", word)
        want = _src_word(word) if 4 * word < size else np.arange(N, dtype=np.uint32)
        assert np.array_equal(got, want), (size, word)


def _zero_filled(word: int, limit: np.ndarray) -> np.ndarray:
    src = _src_word(word).astype(np.uint64)
    keep = np.clip(limit.astype(np.int64) - 4 * word, 0, 4)
    mask = np.where(keep >= 4, 0xFFFFFFFF, (1 << (8 * keep)) - 1).astype(np.uint64)
    return (src & mask).astype(np.uint32)


def test_immediate_src_size_zero_fills(engine):
    for word in range(4):
        got = _run(engine, "cp.async.ca.shared.global [%r2], [%rd1], 16, 6;", word)
        assert np.array_equal(got, _zero_filled(word, np.full(N, 6))), word


def test_register_src_size_zero_fills(engine):
    limit = (np.arange(N) % 18).astype(np.uint32)     # 0..17: none, part, all (and more)
    for word in range(4):
        got = _run(engine, "cp.async.cg.shared.global [%r2], [%rd1], 16, %x0;", word, limit)
        assert np.array_equal(got, _zero_filled(word, limit)), word


def test_ignore_src_predicate_and_a_guard(engine):
    """Odd threads ignore the source (zeros); threads 0..15 do not copy at all."""
    limit = np.arange(N, dtype=np.uint32)
    copy = ("and.b32 %r4, %x0, 1; setp.ne.u32 %p1, %r4, 0; setp.ge.u32 %p2, %x0, 16;"
            "@%p2 cp.async.ca.shared.global.L2::cache_hint [%r2], [%rd1], 8, %p1, %rd2;")
    got = _run(engine, copy, 1, limit)
    want = np.where(limit < 16, limit, np.where(limit % 2, 0, _src_word(1)))
    assert np.array_equal(got, want.astype(np.uint32))


def test_a_bad_source_faults_like_a_load(engine):
    body = "mov.u64 %rd3, 16; cp.async.ca.shared.global [%r2], [%rd3], 4;"
    with pytest.raises(KernelFault, match="illegal address"):
        _run(engine, body, 0)


@pytest.mark.parametrize("copy", ["cp.async.ca.shared.global [%r2], [%rd1], 12;",
                                  "cp.async.ca.shared.global [%r2], %rd1, 4;",
                                  "cp.async.bulk.shared.global [%r2], [%rd1], 16;"])
def test_malformed_copies_are_rejected_at_load(engine, copy):
    with pytest.raises(PtxError, match="cp.async"):
        load_module(kernel_text(["u32", "u32"], "u32", PRE + copy + "mov.u32 %y, 0;", SH), "bad")
