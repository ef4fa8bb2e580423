"""Loader: metadata, data layout, and load-time rejection naming the line and construct."""

from __future__ import annotations

import errno

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gdevd.gpu.ptx import PtxError, load_module

from .helpers import load

HEAD = ".version 7.5\n.target sm_75\n.address_size 64\n"


def test_kernel_metadata_from_nvcc():
    mod = load("basic")
    saxpy = mod.kernels["saxpy"]
    assert [(p.offset, p.size, p.align) for p in saxpy.params] == \
        [(0, 4, 4), (4, 4, 4), (8, 8, 8), (16, 8, 8)]
    assert saxpy.param_size == 24 and saxpy.static_shared == 0
    assert mod.kernels["reduce_sum"].static_shared == 1024
    assert mod.kernels["local_sort"].local_size == 32
    assert "_Z13collatz_stepsx" not in mod.kernels       # .func is not a kernel


def test_struct_param_alignment():
    info = load("exec").kernels["globals_and_params"]
    assert [(p.offset, p.size, p.align) for p in info.params] == [(0, 16, 8), (16, 8, 8),
                                                                    (24, 8, 8)]


def test_data_layout_is_aligned_and_initialized():
    text = HEAD + """
    .global .align 1 .b8 bytes[3] = {1, 2, 3};
    .const .align 8 .f64 d = 0d3FF0000000000000;
    .global .u32 words[4] = {10, 20};
    .global .align 16 .b8 big[40];
    .visible .entry k() { ret; }
    """
    mod = load_module(text)
    lay = mod.data_layout()
    assert lay.offsets == {"bytes": 0, "d": 8, "words": 16, "big": 32}
    assert lay.size == 72
    img = np.frombuffer(lay.image, np.uint8)
    assert img[:3].tolist() == [1, 2, 3]
    assert np.frombuffer(lay.image[8:16], np.float64)[0] == 1.0
    assert np.frombuffer(lay.image[16:32], np.uint32).tolist() == [10, 20, 0, 0]
    assert mod.globals["d"].space == "const" and mod.globals["big"].align == 16
    assert mod.data_layout() is lay                       # deterministic, computed once


def _reject(body: str, line: int, construct: str):
    with pytest.raises(PtxError) as ei:
        load_module(body, "bad.ptx")
    assert ei.value.errno == errno.EINVAL
    assert ei.value.line == line, str(ei.value)
    assert construct in ei.value.construct, str(ei.value)
    assert f"bad.ptx:{line}" in str(ei.value)


KERNEL = HEAD + ".visible .entry k(.param .u64 p)\n{\n.reg .b32 %r<4>;\n{body}\nret;\n}\n"


@pytest.mark.parametrize("body,construct", [
    ("frobnicate.u32 %r1, %r2;", "frobnicate"),
    ("add.u32 %r1, %r2;", "add.u32"),
    ("tex.1d.v4.f32.s32 {%r0, %r1, %r2, %r3}, [tex0, {%r1}];", "tex"),
    ("bra $L_nowhere;", "$L_nowhere"),
    ("st.param.u32 [%r2], %r1;", "st.param.u32"),
    ("atom.global.min.f32 %r1, [%r2], %r3;", "atom.global.min.f32"),
    ("add.u32 %r1, %r2, $;", "add.u32"),
    ("cvt.rn.bf16x2.f16x2 %r1, %r2, %r3;", "cvt"),
    ("max.xorsign.abs.bf16x2 %r1, %r2, %r3;", "max.xorsign.abs.bf16x2"),   # bf16arith.py's
    ("setp.lt.bf16x2 %r1, %r2, %r3;", "setp.lt.bf16x2"),                   # forms refused
])
def test_unsupported_or_malformed_rejected_at_load(body, construct):
    _reject(KERNEL.replace("{body}", body), 7, construct)


def test_recursion_laid_out_once():
    text = HEAD + """.func (.param .b32 r) f(.param .b32 a)
{
.reg .b32 %r<2>;
{ .param .b32 p0; .param .b32 r0;
st.param.b32 [p0], %r1;
call.uni (r0), f, (p0);
}
ret;
}
.visible .entry k() { ret; }
"""
    mod = load_module(text)         # not reachable from a kernel: accepted
    assert list(mod.kernels) == ["k"]
    text2 = text.replace(".visible .entry k() { ret; }", """.visible .entry k()
{
{ .param .b32 p0; .param .b32 r0;
call.uni (r0), f, (p0);
}
ret;
}""")
    info = load_module(text2).kernels["k"]       # f gets real calls (calls.py)
    assert info.frames is not None
    assert sum("~f:" in b.labels for b in info.blocks) == 1


@pytest.mark.parametrize("text,line,construct", [
    (".target sm_75\n", 1, ".version"),
    (HEAD.replace("64", "32"), 3, ".address_size"),
    (HEAD + ".visible .entry k(\n.param .u64 p\n{ ret; }", 6, "{"),
    (HEAD + ".global .u32 x = {sym};\n", 4, "sym"),
    (HEAD + ".visible .entry k() { .reg .b32 %r<2>; mov.u32 %r1, undefined_sym; ret; }\n",
     4, "mov.u32"),
    (HEAD + ".bogus 1;\n", 4, ".bogus"),
])
def test_module_level_errors(text, line, construct):
    _reject(text, line, construct)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=".%$_abcdefghijklmnopqrstuvwxyz0123456789[]{}();,:<>+-=!|@ \n",
               max_size=200))
def test_garbage_is_rejected_cleanly(noise):
    """Any text either loads or raises PtxError: never another exception."""
    try:
        load_module(HEAD + noise)
    except PtxError:
        pass


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 857), st.integers(1, 40))
def test_truncated_nvcc_output_is_rejected_cleanly(start, length):
    lines = load.__globals__["DATA"].joinpath("basic.ptx").read_text().splitlines()
    cut = "\n".join(lines[:start] + lines[start + length:])
    try:
        load_module(cut)
    except PtxError:
        pass


def test_managed_globals_are_globals_to_the_engine():
    """``__managed__`` variables: ``.attribute(.managed)`` (the runtime keeps the host's copy,
    libcudart's managed.c); another attribute is refused."""
    head = ".version 7.0\n.target sm_75\n.address_size 64\n"
    mod = load_module(head + ".global .attribute(.managed) .align 4 .u32 counter = 7;\n"
                      ".global .attribute(.unified(1, 2)) .align 4 .b8 buf[8];\n", "m")
    lay = mod.data_layout()
    assert set(lay.offsets) == {"counter", "buf"}
    assert lay.image[lay.offsets["counter"]:lay.offsets["counter"] + 4] == (7).to_bytes(4, "little")
    with pytest.raises(PtxError, match="unsupported variable attribute"):
        load_module(head + ".global .attribute(.weird) .u32 x;\n", "bad")
