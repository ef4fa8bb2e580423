"""The data-uniformity and constant analysis of the compiling engine (``jit/uniform.py``)."""

from __future__ import annotations

from gdevd.gpu.ptx import load_module
from gdevd.gpu.ptx.jit import cgen
from gdevd.gpu.ptx.jit.uniform import Uniformity, address_regs

HEAD = ".version 7.5\n.target sm_75\n.address_size 64\n"
PAD = "\tadd.u32 %r2, %r2, 1;\n" * 30      # makes a block long enough for LOOP1


def _kernel(body: str, params: str = ".param .u64 out, .param .u64 tab",
            name: str = "k", shared: str = "") -> str:
    return (f"{HEAD}.visible .entry {name}({params})\n{{\n{shared}"
            "\t.reg .pred %p<4>;\n\t.reg .b32 %r<20>;\n\t.reg .b64 %rd<10>;\n"
            f"{body}\tret;\n}}\n")


def _analysis(text: str, kernel: str = "k"):
    mod = load_module(text, "uni")
    info = mod.kernels[kernel]
    syms = cgen.symbols(mod, info)[0]
    return info, Uniformity(info.blocks, [p.name for p in info.params], info.regs, syms)


def _loads(info, uni):
    """(block, index, entry-uniform) of every global load."""
    out = []
    for pc, b in enumerate(info.blocks):
        for k, ins in enumerate(b.instrs):
            if ins.opcode.startswith("ld.global"):
                out.append((pc, k, uni.entry_uniform(pc, k, address_regs(ins.args[1]))))
    return out


STEPPED = _kernel("""\tld.param.u64 %rd1, [tab];
\tmov.u32 %r1, 0;
$L_loop:
\tld.global.u32 %r2, [%rd1];
\tadd.u64 %rd1, %rd1, 4;
\tadd.u32 %r1, %r1, 1;
\tsetp.lt.u32 %p1, %r1, 4;
\t@%p1 bra $L_loop;
\tmov.u32 %r3, %tid.x;
\tmul.wide.u32 %rd2, %r3, 4;
\tadd.u64 %rd2, %rd1, %rd2;
\tld.global.u32 %r2, [%rd2];
""")


def test_param_address_stepped_in_a_loop_is_uniform_and_tid_address_is_not():
    info, uni = _analysis(STEPPED)
    flags = [u for _, _, u in _loads(info, uni)]
    assert flags == [True, False]


def test_loaded_values_and_divergent_guards_are_not_uniform():
    text = _kernel("""\tld.param.u64 %rd1, [tab];
\tbar.sync 0;
\tld.global.u64 %rd2, [%rd1];
\tld.global.u32 %r2, [%rd2];
\tmov.u32 %r3, %tid.x;
\tsetp.lt.u32 %p1, %r3, 3;
\t@%p1 add.u64 %rd1, %rd1, 8;
\tld.global.u32 %r2, [%rd1];
""")
    info, uni = _analysis(text)
    assert [u for _, _, u in _loads(info, uni)] == [True, False, False]


def test_a_register_written_earlier_in_the_block_is_not_entry_uniform():
    text = _kernel("""\tld.param.u64 %rd1, [tab];
\tbar.sync 0;
\tadd.u64 %rd1, %rd1, 16;
\tld.global.u32 %r2, [%rd1];
""")
    info, uni = _analysis(text)
    ((pc, k, flag),) = _loads(info, uni)
    assert not flag and uni.uniform_read(pc, k, address_regs(info.blocks[pc].instrs[k].args[1])[0])


def test_constants_need_every_reaching_definition_to_agree():
    text = _kernel("""\tmov.u32 %r1, %tid.x;
\tmov.u32 %r4, 8;
\tsetp.lt.u32 %p1, %r1, 3;
\t@%p1 bra $L_a;
\tmov.u32 %r5, 7;
\tbra.uni $L_b;
$L_a:
\tmov.u32 %r5, 9;
$L_b:
\tshf.r.wrap.b32 %r6, %r1, %r1, %r4;
\tadd.u32 %r7, %r5, %r4;
\tld.param.u64 %rd1, [out];
\tst.global.u32 [%rd1], %r7;
""")
    mod = load_module(text, "uni")
    info = mod.kernels["k"]
    uni = Uniformity(info.blocks, [p.name for p in info.params], info.regs)
    last = len(info.blocks) - 1
    while not info.blocks[last].instrs:
        last -= 1
    consts = uni.constants(last)
    shf = next(k for k, ins in enumerate(info.blocks[last].instrs) if ins.opcode.startswith("shf"))
    add = shf + 1
    reg4 = info.blocks[last].instrs[shf].args[3].name
    reg5 = info.blocks[last].instrs[add].args[1].name
    assert consts[shf][reg4] == 8 and reg5 not in consts[add]
