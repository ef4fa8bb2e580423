"""Linking several PTX translation units into one module (unitlink.py), run on both engines:
extern functions and variables across inputs, internal symbols of one name kept apart,
weak and common definitions, and the link errors with their reasons."""

from __future__ import annotations

import numpy as np
import pytest

from gdevd.errors import KernelFault
from gdevd.gpu.ptx import PtxError, link_units
from gdevd.gpu.ptx.linker import MAX_INLINED
from gdevd.gpu.ptx.unitlink import MAX_INPUTS, NAME_SHOWN

from .helpers import Device
from .linkunits import USE_VAL, VAL, A, B, unit


def run(mod, dev, data, kernel, n=32, dtype=np.int32):
    out = dev.alloc(4 * n)
    dev.launch(mod, kernel, (1,), (n,), out, data_base=data)
    return dev.get(out, n, dtype)


def test_extern_function_and_variable_across_inputs():
    mod = link_units([("a.ptx", A), ("b.ptx", B)], "ab")
    assert set(mod.kernels) == {"k", "h", "g"}
    assert (mod.ast.version, mod.ast.target) == ("8.0", ["sm_80"])
    dev = Device()
    data = dev.load_data(mod)
    assert run(mod, dev, data, "k", dtype=np.float32).tolist() == [2.0 * i for i in range(32)]
    off = mod.data_layout().offsets["counter"]
    assert dev.get(data + off, 1, np.uint32)[0] == 132           # written by a's kernel
    assert run(mod, dev, data, "g").tolist() == [i + 2 + 132 for i in range(32)]  # read by b's


def test_internal_symbols_of_one_name_stay_apart():
    mod = link_units([("a.ptx", A), ("b.ptx", B)])
    dev = Device()
    data = dev.load_data(mod)
    assert run(mod, dev, data, "h").tolist() == [i + 1 for i in range(32)]   # a's helper
    assert run(mod, dev, data, "g").tolist() == [i + 2 + 100 for i in range(32)]  # b's


def test_link_order_does_not_matter():
    mod = link_units([("b.ptx", B), ("a.ptx", A)])
    dev = Device()
    data = dev.load_data(mod)
    assert run(mod, dev, data, "h").tolist() == [i + 1 for i in range(32)]
    assert run(mod, dev, data, "k", dtype=np.float32)[3] == 6.0


@pytest.mark.parametrize("first, second, expect", [
    (".weak", ".visible", 2),       # a strong definition beats a weak one
    (".visible", ".weak", 1),
    (".weak", ".weak", 1),          # the first weak one
])
def test_weak_definitions(first, second, expect):
    one = unit(VAL.format(linkage=first, value=1))
    two = unit(VAL.format(linkage=second, value=2))
    mod = link_units([("use", USE_VAL), ("one", one), ("two", two)])
    dev = Device()
    assert run(mod, dev, dev.load_data(mod), "use", n=4).tolist() == [expect] * 4


def test_common_takes_the_largest():
    small = unit(".common .global .align 4 .b8 buf[8];\n")
    big = unit(".common .global .align 4 .b8 buf[64];\n")
    mod = link_units([("small", small), ("big", big)])
    assert mod.globals["buf"].size == 64


def test_duplicate_strong_definitions_name_both_inputs():
    one = unit(VAL.format(linkage=".visible", value=1))
    with pytest.raises(PtxError, match=r"duplicate definition of 'val'.* one\.ptx and two\.ptx"):
        link_units([("use", USE_VAL), ("one.ptx", one), ("two.ptx", one)])


def test_unresolved_reference_names_symbol_and_input():
    with pytest.raises(PtxError, match=r"unresolved reference to 'val' \(declared extern in "
                                       r"use\.ptx"):
        link_units([("use.ptx", USE_VAL)])
    with pytest.raises(PtxError, match="'counter'"):
        link_units([("a.ptx", A), ("only-twice", unit(VAL.format(linkage=".visible",
                                                                     value=1)))])


def test_device_runtime_references_resolve_to_the_engine_or_say_so():
    dp = unit(".extern .func (.param .b32 r) __cudaCDP2GetLastError ();\n"
              ".extern .func (.param .b64 r) cudaGetParameterBufferV2 (.param .b64 a);\n")
    link_units([("dp", dp)])        # the engine's builtins (devrt.py)
    copy2d = unit(".extern .func (.param .b32 r) __cudaCDP2Memcpy2DAsync (.param .b64 a);\n")
    with pytest.raises(PtxError, match="__cudaCDP2Memcpy2DAsync.*device runtime .dynamic "
                                       "parallelism. is not supported"):
        link_units([("copy2d", copy2d)])


def test_references_of_the_wrong_kind_or_shape():
    var = unit(".visible .global .u32 val;\n")
    with pytest.raises(PtxError, match="function here but not"):
        link_units([("use", USE_VAL), ("var", var)])
    two_params = unit(".visible .func (.param .b32 r) val (.param .b32 a)\n{\nret;\n}\n")
    with pytest.raises(PtxError, match="declared with 0 parameters"):
        link_units([("use", USE_VAL), ("two", two_params)])
    const = unit(".visible .const .align 4 .u32 counter;\n")
    with pytest.raises(PtxError, match="declared .global, defined .const"):
        link_units([("a", A), ("c", const), ("b-twice", unit(VAL.format(
            linkage=".visible", value=1).replace("val ()", "twice (.param .b32 x)")))])


def test_system_calls_and_dynamic_shared_need_no_definition():
    text = unit("""
.extern .shared .align 16 .b8 smem[];
.extern .func (.param .b32 r) vprintf (.param .b64 f, .param .b64 a);
.extern .func (.param .b64 r) malloc (.param .b64 n);
.extern .func free (.param .b64 p);
.visible .entry e () { ret; }
""")
    mod = link_units([("x", text), ("y", unit(".extern .shared .align 16 .b8 smem[];\n"))])
    assert "e" in mod.kernels


def test_header_reconciled():
    mod = link_units([("a", unit("", "7.0", "sm_70")), ("b", unit("", "8.3", "sm_86")),
                      ("c", unit("", "8.10", "sm_75"))])
    assert (mod.ast.version, mod.ast.target) == ("8.10", ["sm_86"])


def test_limits():
    with pytest.raises(PtxError, match="nothing to link"):
        link_units([])
    with pytest.raises(PtxError, match=f"at most {MAX_INPUTS}"):
        link_units([("u", unit(""))] * (MAX_INPUTS + 1))
    long = "v" * 100_000
    with pytest.raises(PtxError) as exc:
        link_units([("use", USE_VAL.replace("val", long))])
    assert len(str(exc.value)) < 2 * NAME_SHOWN + 200
    with pytest.raises(PtxError, match="unexpected character"):
        link_units([("ok", A), ("bad.ptx", "\x01")])


def test_recursion_across_inputs_runs_until_its_stack_overflows():
    ping = unit("""
.extern .func pong ();
.visible .func ping () { call.uni pong, (); ret; }
.visible .entry go () { call.uni ping, (); ret; }
""")
    pong = unit(".extern .func ping ();\n.visible .func pong () { call.uni ping, (); ret; }\n")
    mod = link_units([("ping", ping), ("pong", pong)])     # real calls (calls.py)
    with pytest.raises(KernelFault, match="stack overflow: .* in go at line"):
        Device().launch(mod, "go", (1,), (32,))


def test_inlining_is_bounded():
    """24 levels of functions calling the next twice: 2**24 copies, refused early."""
    levels = 24
    fns = [".visible .func f0 () { ret; }"]
    for k in range(1, levels):
        fns.append(f".visible .func f{k} () {{ call.uni f{k - 1}, (); "
                   f"call.uni f{k - 1}, (); ret; }}")
    decls = "".join(f".extern .func f{k} ();\n" for k in range(levels))
    top = unit(decls + f".visible .entry go () {{ call.uni f{levels - 1}, (); ret; }}\n")
    units = [("top", top)] + [(f"f{k}", unit(fns[k] + "\n" + (
        f".extern .func f{k - 1} ();\n" if k else ""))) for k in range(levels)]
    with pytest.raises(PtxError, match=f"exceeds {MAX_INLINED}"):
        link_units(units)


TABLE = unit("""
.extern .func (.param .b32 r) val ();
.visible .global .align 8 .u64 table[2] = {val, generic(val)};
.visible .entry via (.param .u64 out)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [out];
    ld.global.u64 %rd4, [table+8];
    {
    .param .b32 r0;
    prototype_0 : .callprototype (.param .b32 _) _ ();
    call (r0), %rd4, (), prototype_0;
    ld.param.u32 %r1, [r0];
    }
    mov.u32 %r2, %tid.x;
    mul.wide.u32 %rd2, %r2, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r1;
    ret;
}
""")


def test_function_pointer_tables_across_inputs():
    """simpleSeparateCompilation's shape: a table of one input initialized with the address
    of another input's function, called through."""
    mod = link_units([("table", TABLE), ("val", unit(VAL.format(linkage=".visible", value=7)))])
    dev = Device()
    data = dev.load_data(mod)
    assert run(mod, dev, data, "via", n=8).tolist() == [7] * 8
    addr = mod.function_addresses["val"]
    assert dev.get(data + mod.data_layout().offsets["table"], 2, np.uint64).tolist() == \
        [addr, addr]


def test_only_function_addresses_initialize():
    bad = unit(".visible .global .u32 x;\n.visible .global .u64 p = x;\n")
    with pytest.raises(PtxError, match="only device functions' addresses"):
        link_units([("bad", bad)])
    narrow = unit(VAL.format(linkage=".visible", value=1) + ".visible .global .u32 q = val;\n")
    with pytest.raises(PtxError, match="64-bit variable"):
        link_units([("narrow", narrow)])


def test_inputs_each_with_its_own_internal_helper():
    """Four units, each an internal helper of one name (returning its unit's number) called
    by the unit's kernel: every kernel calls its own."""
    def one(i: int) -> str:
        return unit(VAL.format(linkage="", value=i).replace("val", "helper")
                    + USE_VAL.split(".address_size 64\n", 1)[1]
                    .replace(".extern .func (.param .b32 r) val ();", "")
                    .replace("use", f"k{i}").replace("val", "helper"))
    mod = link_units([(f"u{i}", one(i)) for i in range(4)])
    assert len(mod.kernels) == 4
    dev = Device()
    data = dev.load_data(mod)
    for i in range(4):
        assert run(mod, dev, data, f"k{i}", n=4).tolist() == [i] * 4
