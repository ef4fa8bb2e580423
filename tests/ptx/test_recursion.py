"""Recursive device functions (calls.py, callstack.py): real calls with per-thread stacks.

Kernels from tests/ptx/data/recursion.cu (its -O3 and -G builds).  Under the ``jit``
engine policy (conftest.py) they stay on the interpreter, which each test checks too.
"""

from __future__ import annotations

import errno

import numpy as np
import pytest

from gdevd.errors import GdevError, KernelFault
from gdevd.gpu.ptx import load_module
from gdevd.gpu.ptx.callstack import STACK_BYTES
from gdevd.gpu.ptx.errors import PtxError

from .helpers import Device, load

MODS = {"O3": load("recursion"), "G": load("recursion.debug")}
G = np.array([3, -1, 4, 1, -5, 9, 2, -6], np.int32)


@pytest.fixture(params=["O3", "G"])
def mod(request, engine):
    m = MODS[request.param]
    yield m
    if engine == "jit":       # the recursive kernels stay interpreted, the loop compiles
        m.jit.start(wait=True)
        rejected = m.jit.compiled.rejected
        assert all("recursive" in rejected[k] for k in m.kernels if k != "fib_loop_kernel"), \
            rejected
        assert m.jit.engine_of("fib_loop_kernel") == "jit", rejected


def fib(n: int) -> int:
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def depot(n: int) -> int:
    a = [int(G[(n + i) & 7]) * (n + 1) for i in range(8)]
    if n <= 0:
        return a[3]
    return depot(n - 1) + a[n & 7] - a[(n + 5) & 7]


def fill(n: int) -> list[int]:
    mine = [n * 10 + i for i in range(4)]
    if n > 0:
        mine = [m + c for m, c in zip(mine, fill(n - 1), strict=True)]
    return mine


def run(dev, mod, kernel, n, *extra, budget=None, block=64):
    out = dev.alloc(16 * n.size)
    launch = dev.launch(mod, kernel, (n.size // block,), (block,), out, dev.put(n), *extra,
                        budget_steps=budget)
    assert launch.engine == "interp"
    return out


def test_fib_divergent_depths(mod):
    """Every thread recurses to its own depth; threads of a block return at different
    times to different call sites."""
    dev = Device()
    n = (np.arange(128) * 7 % 16).astype(np.int32)
    out = run(dev, mod, "fib_kernel", n)
    assert dev.get(out, 128, np.int32).tolist() == [fib(int(x)) for x in n]


def test_fib_lockstep(mod):
    """Every thread at the same depth: calls and returns move whole rows of the stacks."""
    dev = Device()
    out = run(dev, mod, "fib_kernel", np.full(128, 11, np.int32))
    assert dev.get(out, 128, np.int32).tolist() == [fib(11)] * 128


def test_fib_loop_agrees(mod, engine):
    """The loop form (compiled under ``jit``: the module's other kernels are unaffected)."""
    dev = Device()
    n = (np.arange(128) * 7 % 16).astype(np.int32)
    out = dev.alloc(4 * 128)
    launch = dev.launch(mod, "fib_loop_kernel", (2,), (64,), out, dev.put(n))
    assert launch.engine == engine
    assert dev.get(out, 128, np.int32).tolist() == [fib(int(x)) for x in n]


def test_mutual_recursion(mod):
    dev = Device()
    n = (np.arange(64) * 5 % 23).astype(np.int32)
    out = run(dev, mod, "parity_kernel", n)
    assert dev.get(out, 64, np.int32).tolist() == [1 if x % 2 == 0 else 2 for x in n]


def test_local_array_per_activation_two_call_sites(mod):
    dev = Device()
    n = (np.arange(128) * 3 % 11).astype(np.int32)
    out = run(dev, mod, "depot_kernel", n, dev.put(G))
    want = [depot(int(x)) * 3 + (depot(int(x) // 2) if t & 1 else 0) for t, x in enumerate(n)]
    assert dev.get(out, 128, np.int32).tolist() == want


def test_pointer_into_the_callers_frame(mod):
    """A callee writes through a generic pointer into its caller's local array, which
    lies in the caller's frame (or the kernel's static local memory)."""
    dev = Device()
    n = (np.arange(64) % 9).astype(np.int32)
    out = run(dev, mod, "fill_kernel", n)
    assert dev.get(out, 4 * 64, np.int32).reshape(64, 4).tolist() == [fill(int(x)) for x in n]


@pytest.mark.parametrize("budget", [1, 3, 17])
def test_preempted_mid_recursion(mod, budget):
    """run(budget) in small slices stops anywhere in a recursion and resumes exactly."""
    dev = Device()
    n = (np.arange(64) * 3 % 11).astype(np.int32)
    out = run(dev, mod, "depot_kernel", n, dev.put(G), budget=budget)
    whole = run(dev, mod, "depot_kernel", n, dev.put(G))
    assert dev.get(out, 64, np.int32).tolist() == dev.get(whole, 64, np.int32).tolist()
    out = run(dev, mod, "fib_kernel", n % 9, budget=budget)
    assert dev.get(out, 64, np.int32).tolist() == [fib(int(x) % 9) for x in n]


def test_unbounded_recursion_faults(mod):
    """A runaway recursion is a device fault naming the kernel and the call's line; the
    module launches again afterwards."""
    dev = Device()
    flag = dev.put(np.zeros(1, np.int32))
    with pytest.raises(KernelFault) as ei:
        dev.launch(mod, "forever_kernel", (4,), (256,), dev.alloc(1024), flag)
    assert ei.value.errno == errno.EFAULT
    msg = str(ei.value)
    assert "stack overflow" in msg and "forever_kernel" in msg and "at line" in msg
    dev.mmu.write(flag, np.array([12345], np.int32).tobytes())
    out = dev.alloc(1024)
    dev.launch(mod, "forever_kernel", (1,), (256,), out, flag)
    assert dev.get(out, 256, np.int32).tolist() == [0] * 256


HEAD = ".version 7.0\n.target sm_75\n.address_size 64\n"
SELF = HEAD + """
.func (.param .b32 r) f(.param .b32 a)
{{
{decl}
.reg .b32 %r<3>;
ld.param.b32 %r1, [a];
{body}
{{ .param .b32 p0; .param .b32 r0;
st.param.b32 [p0], %r1;
call.uni (r0), f, (p0);
ld.param.b32 %r2, [r0];
}}
st.param.b32 [r], %r2;
ret;
}}
.visible .entry k()
{{
.reg .b32 %r<2>;
{{ .param .b32 p0; .param .b32 r0;
st.param.b32 [p0], %r1;
call.uni (r0), f, (p0);
}}
ret;
}}
"""


def test_enormous_frames_refused_at_launch():
    """An activation larger than a thread's stack cannot run: the launch is refused."""
    mod = load_module(SELF.format(decl=f".local .align 8 .b8 big[{STACK_BYTES}];",
                                  body=""), "big.ptx")
    with pytest.raises(GdevError) as ei:
        Device().prepare(mod, "k", (1,), (32,))
    assert ei.value.errno == errno.ENOMEM


def test_barrier_in_recursive_function_refused():
    with pytest.raises(PtxError) as ei:
        load_module(SELF.format(decl="", body="bar.sync 0;"), "bar.ptx")
    assert "recursive function" in str(ei.value)


def test_indirect_recursion_through_a_function_pointer():
    """A function calling itself through a pointer is on a cycle: it gets real calls."""
    text = HEAD + """
.func (.param .b32 r) f(.param .b32 a)
{
.reg .b32 %r<4>; .reg .b64 %rd<2>; .reg .pred %p<2>;
ld.param.b32 %r1, [a];
mov.u32 %r2, 0;
setp.eq.s32 %p1, %r1, 0;
@%p1 bra DONE;
mov.u64 %rd1, f;
add.s32 %r3, %r1, -1;
{ .param .b32 p0; .param .b32 r0;
st.param.b32 [p0], %r3;
prot: .callprototype (.param .b32 _) _ (.param .b32 _);
call (r0), %rd1, (p0), prot;
ld.param.b32 %r2, [r0];
}
add.s32 %r2, %r2, %r1;
DONE:
st.param.b32 [r], %r2;
ret;
}
.visible .entry k(.param .u64 out)
{
.reg .b32 %r<3>; .reg .b64 %rd<4>;
mov.u32 %r1, %tid.x;
{ .param .b32 p0; .param .b32 r0;
st.param.b32 [p0], %r1;
call.uni (r0), f, (p0);
ld.param.b32 %r2, [r0];
}
ld.param.u64 %rd1, [out];
mul.wide.u32 %rd2, %r1, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r2;
ret;
}
"""
    mod = load_module(text, "iself.ptx")
    dev = Device()
    out = dev.alloc(4 * 64)
    dev.launch(mod, "k", (1,), (64,), out)
    assert dev.get(out, 64, np.int32).tolist() == [t * (t + 1) // 2 for t in range(64)]


def test_a_call_saves_only_what_is_live_after_it():
    """framelive.py: fib's recursive calls save the one register each needs afterwards
    (n, then fib(n - 1)), the kernel's own call saves nothing."""
    frames = MODS["O3"].kernels["fib_kernel"].frames
    kernel_site, *inner = sorted(frames.sites)
    assert frames.sites[kernel_site].regs == () and frames.sites[kernel_site].pvars == ()
    assert [len(frames.sites[s].regs) for s in inner] == [1, 1]


PREDICATED_RET = HEAD + """
.func (.param .b32 r) sum(.param .b32 a)
{
.reg .b32 %r<4>; .reg .pred %p<2>;
ld.param.b32 %r1, [a];
st.param.b32 [r], 0;
setp.le.s32 %p1, %r1, 0;
@%p1 ret;
add.s32 %r2, %r1, -1;
{ .param .b32 p0; .param .b32 r0;
st.param.b32 [p0], %r2;
call.uni (r0), sum, (p0);
ld.param.b32 %r3, [r0];
}
add.s32 %r3, %r3, %r1;
st.param.b32 [r], %r3;
ret;
}
.visible .entry k(.param .u64 out)
{
.reg .b32 %r<4>; .reg .b64 %rd<4>;
mov.u32 %r1, %tid.x;
and.b32 %r1, %r1, 15;
{ .param .b32 p0; .param .b32 r0;
st.param.b32 [p0], %r1;
call.uni (r0), sum, (p0);
ld.param.b32 %r2, [r0];
}
mov.u32 %r1, %tid.x;
ld.param.u64 %rd1, [out];
mul.wide.u32 %rd2, %r1, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r2;
ret;
}
"""


@pytest.mark.parametrize("budget", [None, 2])
def test_predicated_return_at_divergent_depths(budget):
    """``@%p ret`` in a recursive function: the threads whose predicate holds return (each
    to its own depth's call site), the others go on, in the same step."""
    mod = load_module(PREDICATED_RET, "pret.ptx")
    dev = Device()
    out = dev.alloc(4 * 96)
    dev.launch(mod, "k", (1,), (96,), out, budget_steps=budget)
    assert dev.get(out, 96, np.int32).tolist() == [(t % 16) * (t % 16 + 1) // 2
                                                   for t in range(96)]
