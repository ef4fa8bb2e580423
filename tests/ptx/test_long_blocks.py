"""The long-block (``LOOP1``) memory paths of the compiling engine: data-uniform global loads
translated once at block entry, loads checked inside the lane loop, shared table lookups
without bounds checks (``jit/ranges.py``).  conftest.py runs the launching tests on both
engines."""

from __future__ import annotations

import re

import numpy as np
import pytest

from gdevd.errors import KernelFault
from gdevd.gpu.ptx import jit, load_module
from gdevd.gpu.ptx.jit import cgen
from gdevd.gpu.ptx.jit.ranges import safe_shared

from .helpers import Device
from .test_jit import KERNELS
from .test_uniform import PAD, _analysis, _kernel, _loads


@pytest.mark.parametrize(("index", "safe"), [
    ("\tshr.u32 %r3, %r1, 22;\n\tand.b32 %r3, %r3, 1020;\n", True),   # a T-table word
    ("\tand.b32 %r3, %r1, 1022;\n", False),                           # misaligned
    ("\tand.b32 %r3, %r1, 2044;\n", False),                           # past the table
    ("\tshl.b32 %r3, %r1, 2;\n", False),                              # any value
])
def test_shared_table_lookups_are_proven_in_bounds_only_when_they_are(index, safe):
    text = _kernel(f"""\tmov.u32 %r1, %tid.x;
{index}\tmov.u32 %r4, table;
\tadd.s32 %r3, %r4, %r3;
\tld.shared.u32 %r2, [%r3];
""", shared="\t.shared .align 4 .b8 table[1024];\n")
    info, uni = _analysis(text)
    (blk,) = [b for b in info.blocks if b.instrs]
    k = next(k for k, ins in enumerate(blk.instrs) if ins.opcode.startswith("ld.shared"))
    assert (k in safe_shared(blk, uni.constants(0), info.static_shared)) == safe




JOINED = _kernel(f"""\tld.param.u64 %rd1, [out];
\tld.param.u64 %rd2, [tab];
\tmov.u32 %r1, %tid.x;
\tmov.u32 %r2, 0;
\tsetp.lt.u32 %p1, %r1, 5;
\tmov.u64 %rd3, %rd2;
\t@%p1 bra $L_join;
\tadd.u64 %rd3, %rd2, 4;
$L_join:
\tld.global.u32 %r4, [%rd3];
{PAD}\tld.global.u32 %r5, [%rd3+8];
\tadd.u32 %r2, %r2, %r4;
\tadd.u32 %r2, %r2, %r5;
\tmul.wide.u32 %rd4, %r1, 4;
\tadd.u64 %rd4, %rd1, %rd4;
\tst.global.u32 [%rd4], %r2;
""")


def test_a_data_uniform_address_that_differs_between_lanes_reads_each_lanes_value():
    info, uni = _analysis(JOINED)
    assert all(flag for _, _, flag in _loads(info, uni))   # hoisted, yet lanes differ
    dev = Device()
    tab = dev.put(np.array([10, 20, 300, 400], np.uint32))
    out = dev.alloc(4 * 64)
    dev.launch(load_module(JOINED, "joined"), "k", (2,), (64,), out, tab)
    lanes = np.arange(64)
    want = np.where(lanes < 5, 10 + 300, 20 + 400) + 30
    assert np.array_equal(dev.get(out, 64, np.uint32), want)


def _aes_c(kernel: str) -> str:
    """The C of one kernel of kernels/aes.ptx."""
    mod = load_module((KERNELS / "aes.ptx").read_text(), "aes")
    return cgen.kernel_c(mod, mod.kernels[kernel], "k")


def _faulting(first: str, second: str) -> str:
    """A long block whose lane 1 faults at a shared load and lane 3 at a global load."""
    acc = {"shared": "\tld.shared.u32 %r8, [%r5];\n",
           "global": "\tld.global.u32 %r9, [%rd3];\n",
           "uniform": "\tld.global.u32 %r9, [%rd2+4];\n"}
    return _kernel(f"""\tld.param.u64 %rd1, [out];
\tld.param.u64 %rd2, [tab];
\tmov.u32 %r1, %tid.x;
\tmov.u32 %r2, 0;
\tshl.b32 %r4, %r1, 2;
\tsetp.eq.u32 %p1, %r1, 1;
\tselp.u32 %r5, 4096, %r4, %p1;
\tmov.u32 %r6, sh;
\tadd.u32 %r5, %r5, %r6;
\tsetp.eq.u32 %p2, %r1, 3;
\tselp.b64 %rd3, %rd2, %rd1, %p2;
{PAD}{acc[first]}{PAD}{acc[second]}\tadd.u32 %r2, %r2, %r8;
\tst.global.u32 [%rd1], %r2;
""", shared="\t.shared .align 4 .b8 sh[256];\n")


def _fault(engine: str, text: str) -> str:
    jit.set_engine(engine)
    dev = Device()
    out = dev.alloc(256)
    with pytest.raises(KernelFault) as ei:
        dev.launch(load_module(text, "faults"), "k", (3,), (32,), out, 1 << 30)
    return str(ei.value)


@pytest.mark.parametrize("engine", ["jit"], indirect=True)
@pytest.mark.parametrize("order", [("shared", "global"), ("global", "shared"),
                                   ("shared", "uniform"), ("uniform", "shared")])
def test_checked_loads_of_a_long_block_report_the_interpreters_fault(order):
    text = _faulting(*order)
    mod = load_module(text, "faults")
    mod.start_compile(wait=True)
    assert mod.jit.engine_of("k") == "jit"
    compiled, interpreted = _fault("jit", text), _fault("interp", text)
    assert compiled == interpreted


@pytest.mark.parametrize("engine", ["jit"], indirect=True)
def test_the_aes_rounds_use_hoisted_round_keys_and_unchecked_table_lookups():
    src = _aes_c("aes256_xts_encrypt")
    assert src.count("up0_ = gptr(") >= 3 and "ua3_" in src
    assert src.count("uint8_t *p_ = xb + ((int32_t)((uint32_t)(") >= 80


DIVERGENT_LOOP = _kernel(f"""\tld.param.u64 %rd1, [out];
\tmov.u32 %r1, %tid.x;
\tmov.u32 %r2, 0;
\tmov.u32 %r3, 0;
\tmov.u32 %r4, 0;
$L_loop:
{PAD}\tadd.u32 %r3, %r3, %r1;
\tadd.u32 %r4, %r4, 1;
\tsetp.lt.u32 %p1, %r4, %r1;
\t@%p1 bra $L_loop;
\tmul.lo.u32 %r3, %r3, 1000;
\tadd.u32 %r2, %r2, %r3;
\tmul.wide.u32 %rd2, %r1, 4;
\tadd.u64 %rd2, %rd1, %rd2;
\tst.global.u32 [%rd2], %r2;
""")


def test_registers_kept_in_locals_carry_across_a_divergent_loop():
    dev = Device()
    out = dev.alloc(4 * 96)
    dev.launch(load_module(DIVERGENT_LOOP, "divloop"), "k", (1,), (96,), out, 0)
    tid = np.arange(96)
    trips = np.maximum(tid, 1)
    assert np.array_equal(dev.get(out, 96, np.uint32), 30 * trips + 1000 * tid * trips)


@pytest.mark.parametrize("engine", ["jit"], indirect=True)
def test_the_aes_rounds_keep_their_registers_in_locals():
    src = _aes_c("aes256_xts_encrypt")
    assert src.count("LOOP1(uint") >= 4 and len(re.findall(r"L\d+_ = R\d+\[i\];", src)) >= 20
