"""The device library (gdevd/gpu/ptx/devlib.py): functions the driver provides to PTX that
declares them without defining them, inlined like the module's own, on both engines."""

from __future__ import annotations

import numpy as np
import pytest

from gdevd.errors import KernelFault
from gdevd.gpu.ptx import PtxError, load_module

from .helpers import Device

HEADER = ".version 7.0\n.target sm_75\n.address_size 64\n"
DECL = ".extern .func cudaGraphSetConditional(.param .b64 h, .param .b32 v);\n"
KERNEL = """
.visible .entry decide(.param .u64 handle, .param .u32 value) {
  .reg .b64 %h;
  .reg .b32 %v, %t;
  .reg .pred %p;
  ld.param.u64 %h, [handle];
  ld.param.u32 %v, [value];
  mov.u32 %t, %tid.x;
  setp.ne.u32 %p, %t, 3;
  @%p bra done;
  { .param .b64 a; .param .b32 b;
    st.param.b64 [a], %h; st.param.b32 [b], %v;
    call.uni cudaGraphSetConditional, (a, b); }
done:
  ret;
}
"""


def test_set_conditional_stores_the_value_at_the_handle() -> None:
    mod = load_module(HEADER + DECL + KERNEL, "cond")
    dev = Device()
    word = dev.put(np.array([0, 0], np.uint32))
    dev.launch(mod, "decide", (1, 1, 1), (32, 1, 1), word + 4, 0xC0FFEE)
    assert dev.get(word, 2, np.uint32).tolist() == [0, 0xC0FFEE]


def test_a_module_of_its_own_definition_keeps_it() -> None:
    own = DECL.replace(".extern .func", ".visible .func").rstrip(";\n") + """
{
  .reg .b64 %a;
  ld.param.b64 %a, [h];
  st.global.u32 [%a], 7;
  ret;
}
"""
    mod = load_module(HEADER + own + KERNEL, "own")
    dev = Device()
    word = dev.put(np.zeros(1, np.uint32))
    dev.launch(mod, "decide", (1, 1, 1), (32, 1, 1), word, 99)
    assert dev.get(word, 1, np.uint32).tolist() == [7]


def test_a_handle_no_address_of_the_context_faults_naming_the_kernel() -> None:
    mod = load_module(HEADER + DECL + KERNEL, "cond")
    with pytest.raises(KernelFault, match="decide"):
        Device().launch(mod, "decide", (1, 1, 1), (32, 1, 1), 0x10, 1)


@pytest.mark.parametrize("decl, call", [
    (".extern .func cudaGraphSetConditional(.param .b32 a);", "(b)"),
    (".extern .func cudaGraphSetConditional(.param .b32 a, .param .b32 b);", "(b, b)"),
])
def test_a_declaration_of_other_parameters_is_refused_or_faults(decl, call) -> None:
    """A hostile declaration: another arity is refused at load; a 4-byte handle makes the
    library read 8 bytes of a 4-byte parameter, which must end in a refusal or a clean
    fault, never the daemon's memory."""
    text = HEADER + decl + "\n" + KERNEL.replace("call.uni cudaGraphSetConditional, (a, b);",
                                                  f"call.uni cudaGraphSetConditional, {call};")
    try:
        mod = load_module(text, "hostile")
    except PtxError:
        return
    dev = Device()
    word = dev.put(np.zeros(1, np.uint32))
    try:
        dev.launch(mod, "decide", (1, 1, 1), (32, 1, 1), word, 5)
    except KernelFault:
        return
    assert dev.get(word, 1, np.uint32).tolist() in ([0], [5])


ERR_KERNEL = """
.extern .func (.param .b64 r) __cudaCDP2GetErrorString(.param .b32 e);
.visible .entry strings(.param .u64 out) {
  .reg .b64 %o, %s, %d;
  .reg .b32 %t, %c, %k;
  .reg .pred %p;
  ld.param.u64 %o, [out];
  mov.u32 %t, %tid.x;
  mov.u32 %c, 0;
  setp.eq.u32 %p, %t, 1;
  @%p mov.u32 %c, 801;
  setp.eq.u32 %p, %t, 2;
  @%p mov.u32 %c, 12345;
  { .param .b32 a; .param .b64 r;
    st.param.b32 [a], %c;
    call.uni (r), __cudaCDP2GetErrorString, (a);
    ld.param.b64 %s, [r]; }
  mul.wide.u32 %d, %t, 32;
  add.u64 %d, %o, %d;
  mov.u32 %k, 0;
copy:
  ld.u8 %c, [%s];
  st.global.u8 [%d], %c;
  add.u64 %s, %s, 1;
  add.u64 %d, %d, 1;
  add.u32 %k, %k, 1;
  setp.lt.u32 %p, %k, 32;
  @%p bra copy;
  ret;
}
"""


def test_the_device_runtimes_error_strings() -> None:
    mod = load_module(HEADER + ERR_KERNEL, "strings")
    dev = Device()
    out = dev.put(np.zeros(96, np.uint8))
    dev.launch(mod, "strings", (1, 1, 1), (3, 1, 1), out)
    rows = [bytes(dev.get(out + 32 * k, 32, np.uint8)).split(b"\0")[0] for k in range(3)]
    assert rows == [b"no error", b"operation not supported", b"unrecognized error code"]
