"""The fast version of long loop blocks whose global loads are uniform (``jit/versions.py``):
taken when every lane's address is the same and translates, else the ``LOOP1`` version;
both must give the interpreter's results and faults.  conftest.py runs the launching tests
on both engines."""

from __future__ import annotations

import numpy as np
import pytest

from gdevd.errors import KernelFault
from gdevd.gpu.ptx import jit, load_module
from gdevd.gpu.ptx.jit import cgen

from .helpers import Device
from .test_uniform import PAD, _kernel

ROUNDS = 4
GOLDEN = 0x9E3779B1


def _rounds(split: bool = False, bad_lane: int | None = None, store_first: bool = False) -> str:
    """A kernel whose loop body is one long block: per round a uniform global load (the
    round key at ``tab + 4 * round``), a shared table lookup proven in bounds and a
    rotate.  ``split``: lanes below 5 read the keys one word earlier (data-uniform, yet the
    lanes differ); ``bad_lane``: that lane also reads shared memory out of bounds from the
    second round on; ``store_first``: every lane stores its state at the key's address
    before loading it."""
    join = "\tsetp.lt.u32 %p2, %r1, 5;\n\t@%p2 bra $L_join;\n\tadd.u64 %rd2, %rd2, 4;\n" \
        "$L_join:\n" if split else ""
    bad = (f"\tsetp.eq.u32 %p3, %r1, {bad_lane};\n\tselp.u32 %r13, 4096, 0, %p3;\n"
           "\tmul.lo.u32 %r13, %r13, %r7;\n\tadd.u32 %r13, %r13, %r5;\n"
           "\tld.shared.u32 %r14, [%r13];\n\txor.b32 %r6, %r6, %r14;\n"
           if bad_lane is not None else "")
    store = "\tst.global.u32 [%rd2], %r6;\n" if store_first else ""
    return _kernel(f"""\tld.param.u64 %rd1, [out];
\tld.param.u64 %rd2, [tab];
\tmov.u32 %r1, %tid.x;
\tmov.u32 %r2, 0;
\tmul.lo.u32 %r3, %r1, {GOLDEN};
\tshl.b32 %r4, %r1, 2;
\tmov.u32 %r5, sh;
\tadd.u32 %r4, %r5, %r4;
\tst.shared.u32 [%r4], %r3;
\tbar.sync 0;
{join}\tmov.u32 %r6, %r1;
\tmov.u32 %r7, 0;
$L_loop:
{store}\tld.global.u32 %r8, [%rd2];
\tshr.u32 %r9, %r6, 6;
\tand.b32 %r9, %r9, 1020;
\tadd.u32 %r9, %r5, %r9;
\tld.shared.u32 %r10, [%r9];
\tshl.b32 %r11, %r6, 5;
\tshr.u32 %r12, %r6, 27;
\tor.b32 %r11, %r11, %r12;
\txor.b32 %r6, %r11, %r10;
\txor.b32 %r6, %r6, %r8;
{bad}{PAD * 3}\tadd.u64 %rd2, %rd2, 4;
\tadd.u32 %r7, %r7, 1;
\tsetp.lt.u32 %p1, %r7, {ROUNDS};
\t@%p1 bra $L_loop;
\txor.b32 %r6, %r6, %r2;
\tmul.wide.u32 %rd3, %r1, 4;
\tadd.u64 %rd3, %rd1, %rd3;
\tst.global.u32 [%rd3], %r6;
""", shared="\t.shared .align 4 .b8 sh[1024];\n")


def _expected(nt: int, keys: np.ndarray, split: bool = False,
              store_first: bool = False) -> np.ndarray:
    """What the kernel of :func:`_rounds` writes, computed round by round in Python (the
    interpreter's order: every lane finishes an instruction before any lane starts the
    next, so with ``store_first`` each round's key is the last lane's state)."""
    table = [(t * GOLDEN) % 2**32 if t < nt else 0 for t in range(256)]
    xs = list(range(nt))
    for r in range(ROUNDS):
        last = xs[-1]
        for tid, x in enumerate(xs):
            key = last if store_first else int(keys[r + (1 if split and tid >= 5 else 0)])
            xs[tid] = ((x << 5) | (x >> 27)) % 2**32 ^ table[(x >> 8) & 0xFF] ^ key
    return np.array(xs, np.uint32) ^ np.uint32(3 * len(PAD.splitlines()) * ROUNDS)


def _run(text: str, nt: int, keys: np.ndarray) -> np.ndarray:
    dev = Device()
    tab = dev.put(keys)
    out = dev.alloc(4 * nt)
    dev.launch(load_module(text, "rounds"), "k", (1,), (nt,), out, tab)
    return dev.get(out, nt, np.uint32)


KEYS = np.array([0x01234567, 0x89ABCDEF, 0xDEADBEEF, 0x0BADF00D, 0x600DCAFE], np.uint32)


@pytest.mark.parametrize("nt", [256, 96, 64])
def test_uniform_round_keys_give_each_lanes_result(nt):
    """256 and 64 lanes take the fast version, 96 (not a multiple of 64) the other."""
    assert np.array_equal(_run(_rounds(), nt, KEYS), _expected(nt, KEYS))


def test_round_keys_that_differ_between_lanes_take_the_checked_version():
    got = _run(_rounds(split=True), 256, KEYS)
    assert np.array_equal(got, _expected(256, KEYS, split=True))


def test_a_store_before_the_uniform_load_is_seen_by_it():
    """Every lane stores its state at the key's address, in lane order, then loads it: all
    lanes read the last lane's store (so the key may not be read once at block entry)."""
    got = _run(_rounds(store_first=True), 128, KEYS)
    assert np.array_equal(got, _expected(128, KEYS, store_first=True))


def _fault(engine: str, text: str, tab: int | None) -> str:
    jit.set_engine(engine)
    dev = Device()
    out = dev.alloc(4 * 256)
    mod = load_module(text, "rounds")
    if engine == "jit":
        mod.start_compile(wait=True)
        assert mod.jit.engine_of("k") == "jit"
    with pytest.raises(KernelFault) as ei:
        dev.launch(mod, "k", (1,), (256,), out, dev.put(KEYS) if tab is None else tab)
    return str(ei.value)


@pytest.mark.parametrize("engine", ["jit"], indirect=True)
@pytest.mark.parametrize(("bad_lane", "tab"), [(None, 1 << 30), (37, None), (0, None)])
def test_faults_of_either_version_are_the_interpreters(bad_lane, tab):
    """An unmapped uniform load (the checked version) and a shared lookup out of bounds in
    the fast version report the same kernel, address and line as the interpreter."""
    text = _rounds(bad_lane=bad_lane)
    assert _fault("jit", text, tab) == _fault("interp", text, tab)


def _versioned_blocks(text: str) -> int:
    mod = load_module(text, "rounds")
    return cgen.kernel_c(mod, mod.kernels["k"], "k").count("if (uok_) {")


def test_only_loop_blocks_without_an_earlier_store_have_a_fast_version():
    assert _versioned_blocks(_rounds()) == 1
    assert _versioned_blocks(_rounds(store_first=True)) == 0
    once = _rounds().replace("\t@%p1 bra $L_loop;\n", "")    # the block runs once
    assert _versioned_blocks(once) == 0
