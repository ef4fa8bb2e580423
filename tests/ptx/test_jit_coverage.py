"""Instructions the compiler translates since #12 (carry chains, brev, bfind, signed bfe,
sad, lop3, mul24, dp4a/dp2a, match, bar.red, f16 and f16x2 arithmetic and conversions), each run
compiled and interpreted on the same random inputs: identical bits."""

from __future__ import annotations

import time

import numpy as np
import pytest

from gdevd.gpu.ptx import jit, load_module

from .helpers import Device
from .isa import kernel_text, run_snippet

N = 256
EDGE32 = np.array([0, 1, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 31, 32, 33, 64, 255], np.uint64)


def _inputs(rng, t: str) -> np.ndarray:
    """Random words of type ``t``: edge values, then full-width and small (pos/len) ones."""
    bits = 64 if t.endswith("64") else 32
    r = rng.integers(0, 1 << 62, N, dtype=np.uint64) * np.uint64(4) + \
        rng.integers(0, 4, N, dtype=np.uint64)
    r[:len(EDGE32)] = EDGE32
    small = rng.integers(0, 80, N, dtype=np.uint64)
    r[N // 2:] = np.where(rng.random(N - N // 2) < 0.5, small[N // 2:], r[N // 2:])
    return (r if bits == 64 else r & np.uint64(0xFFFFFFFF)).astype(
        np.uint64 if bits == 64 else np.uint32)


def _run(engine: str, body: str, types: list[str], out: str) -> np.ndarray:
    jit.set_engine(engine)
    mod = load_module(kernel_text(types, out, body), "cov")
    if engine == "jit":
        mod.start_compile(wait=True)
        assert mod.jit.engine_of("k") == "jit", mod.jit.compiled.rejected
    dev = Device(8 << 20)
    rng = np.random.default_rng(1)
    ptrs = [dev.put(_inputs(rng, t)) for t in types]
    size = 8 if out.endswith("64") else 4
    o = dev.alloc(N * size)
    dev.launch(mod, "k", (N // 64,), (64,), *ptrs, o)
    return dev.get(o, N, np.uint64 if size == 8 else np.uint32)


CARRY = ("add.cc.u32 %r3, %x0, %x1; addc.cc.u32 %r4, %x1, %x2; addc.u32 %r5, %x2, %x0;"
         "sub.cc.u32 %r6, %r3, %r4; subc.cc.u32 %r6, %r6, %r5; subc.u32 %r7, %r6, %x0;"
         "mad.lo.cc.u32 %r3, %x0, %x1, %r7; madc.hi.cc.u32 %r4, %x1, %x2, %r3;"
         "madc.lo.u32 %r5, %r4, %x0, %r3; xor.b32 %y, %r5, %r4; xor.b32 %y, %y, %r7;")
CASES = [
    (CARRY, ["u32", "u32", "u32"], "u32"),
    ("add.cc.u64 %rd3, %x0, %x1; addc.cc.u64 %rd4, %x1, %x0; madc.hi.s64 %rd5, %rd4, %x1, "
     "%rd3; sub.cc.s64 %rd6, %rd5, %x0; subc.u64 %y, %rd6, %rd4;", ["u64", "u64"], "u64"),
    ("brev.b32 %y, %x0;", ["u32"], "u32"), ("brev.b64 %y, %x0;", ["u64"], "u64"),
    ("bfind.u32 %y, %x0;", ["u32"], "u32"), ("bfind.s32 %y, %x0;", ["s32"], "u32"),
    ("bfind.shiftamt.u64 %y, %x0;", ["u64"], "u32"),
    ("bfe.s32 %y, %x0, %x1, %x2;", ["s32", "u32", "u32"], "s32"),
    ("bfe.s64 %y, %x0, %x1, %x2;", ["s64", "u32", "u32"], "s64"),
    ("bfe.u32 %y, %x0, %x1, %x2;", ["u32", "u32", "u32"], "u32"),
    ("sad.s32 %y, %x0, %x1, %x2;", ["s32", "s32", "s32"], "s32"),
    ("sad.u64 %y, %x0, %x1, %x2;", ["u64", "u64", "u64"], "u64"),
    ("mul24.hi.s32 %r3, %x0, %x1; mad24.lo.u32 %y, %x1, %x2, %r3;", ["s32", "u32", "u32"],
     "u32"),
    ("mul24.lo.s32 %r3, %x0, %x1; mad24.hi.s32 %y, %x1, %r3, %x0;", ["s32", "s32"], "s32"),
    ("dp4a.s32.u32 %r3, %x0, %x1, %x2; dp4a.u32.s32 %y, %x1, %x0, %r3;",
     ["u32", "u32", "u32"], "u32"),
    ("dp4a.u32.u32 %r3, %x0, %x1, %x2; dp4a.s32.s32 %y, %x1, %x0, %r3;",
     ["u32", "u32", "u32"], "u32"),
    ("dp2a.lo.s32.u32 %r3, %x0, %x1, %x2; dp2a.hi.u32.s32 %y, %x1, %x0, %r3;",
     ["u32", "u32", "u32"], "u32"),
    ("lop3.b32 %y, %x0, %x1, %x2, 0x96;", ["u32", "u32", "u32"], "u32"),
    ("lop3.b32 %y, %x0, %x1, %x2, 0xE8;", ["u32", "u32", "u32"], "u32"),
    ("and.b32 %r3, %x0, 7; mov.b32 %y, 9; setp.lt.u32 %p1, %x1, 30; @%p1 bra $L1;"
     "match.any.sync.b32 %y, %r3, -1; $L1:", ["u32", "u32"], "u32"),
    ("and.b32 %r3, %x0, 1; mov.b32 %y, 9; setp.lt.u32 %p1, %x1, 60; @%p1 bra $L1;"
     "match.all.sync.b32 %y|%p2, %r3, -1; selp.u32 %r4, 1, 0, %p2; add.u32 %y, %y, %r4;"
     "$L1:", ["u32", "u32"], "u32"),
    ("and.b64 %rd3, %x0, 3; match.any.sync.b64 %y, %rd3, -1;", ["u64"], "u32"),
    ("setp.lt.u32 %p1, %x0, 50; bar.red.popc.u32 %y, 0, %p1;", ["u32"], "u32"),
    ("setp.lt.u32 %p1, %x1, 40; @%p1 ret; setp.ne.u32 %p2, %x0, 0; bar.red.and.pred %p3, 0, "
     "%p2; bar.red.or.pred %p4, 0, !%p2; selp.u32 %r3, 2, 0, %p3; selp.u32 %r4, 1, 0, %p4; "
     "add.u32 %y, %r3, %r4;", ["u32", "u32"], "u32"),
]


@pytest.mark.parametrize("engine", ["jit"], indirect=True)
@pytest.mark.parametrize("body,types,out", CASES, ids=[c[0].split()[0] for c in CASES])
def test_compiled_matches_the_interpreter(engine, body, types, out):
    assert _run("jit", body, types, out).tolist() == _run("interp", body, types, out).tolist()


_R = np.random.default_rng(4)
H = np.concatenate([_R.standard_normal(200) * np.exp2(_R.integers(-20, 16, 200)),
                    [0, -0.0, np.inf, -np.inf, np.nan, 65504, 6e-8, 1, 0.1]]).astype(np.float16)
G = np.roll(H, 7)
F = np.concatenate([_R.standard_normal(200) * np.exp2(_R.integers(-30, 20, 200)),
                    [0, -0.0, np.inf, -np.inf, np.nan, 65519, 65520, 1e-9, -1e-9]]
                   ).astype(np.float32)
PAIRS = H.view(np.uint16).astype(np.uint32) | (G.view(np.uint16).astype(np.uint32) << 16)
HALF = [(b, [("f16", H), ("f16", G)], "f16") for b in (
    "add.f16 %y, %x0, %x1;", "sub.f16 %y, %x0, %x1;", "mul.f16 %y, %x0, %x1;",
    "fma.rn.f16 %y, %x0, %x1, %x0;", "min.f16 %y, %x0, %x1;", "max.f16 %y, %x0, %x1;",
    "neg.f16 %y, %x0;", "abs.f16 %y, %x0;", "add.rz.f16 %y, %x0, %x1;",
    "mul.rm.f16 %y, %x0, %x1;", "selp.f16 %y, %x0, %x1, 1;")]
HALF += [(f"cvt.{m}.f16.f32 %y, %x0;", [("f32", F)], "f16")
         for m in ("rn", "rz", "rm", "rp", "rni", "rn.sat")]
HALF += [("cvt.f32.f16 %y, %x0;", [("f16", H)], "f32"),
         ("cvt.f64.f16 %y, %x0;", [("f16", H)], "f64"),
         ("cvt.rzi.s32.f16 %y, %x0;", [("f16", H)], "s32"),
         ("setp.lt.f16 %y, %x0, 0f3F800000;", [("f16", H)], "pred"),
         ("cvt.rn.f16.s32 %y, %x0;", [("s32", _R.integers(-70000, 70000, 300))], "f16")]
HALF += [(b, [("u32", PAIRS), ("u32", np.roll(PAIRS, 3))], "u32") for b in (
    "add.f16x2 %y, %x0, %x1;", "mul.rn.f16x2 %y, %x0, %x1;", "sub.f16x2 %y, %x0, %x1;",
    "fma.rn.f16x2 %y, %x0, %x1, %x0;", "neg.f16x2 %y, %x0;", "max.f16x2 %y, %x0, %x1;")]


@pytest.mark.parametrize("engine", ["jit"], indirect=True)
@pytest.mark.parametrize("body,inputs,out", HALF, ids=[c[0].split()[0] for c in HALF])
def test_half_forms_match_the_interpreter(engine, body, inputs, out):
    mod = load_module(kernel_text([t for t, _ in inputs], out, body), "half")
    mod.start_compile(wait=True)
    assert mod.jit.engine_of("k") == "jit", mod.jit.compiled.rejected
    got = run_snippet(body, inputs, out)
    jit.set_engine("interp")
    ref = run_snippet(body, inputs, out)
    assert got.tobytes() == ref.tobytes()


@pytest.mark.parametrize("engine", ["jit"], indirect=True)
def test_both_engines_read_one_clock(engine):
    """Event markers read %globaltimer on whichever engine serves them: one clock."""
    body = "mov.u64 %y, %globaltimer;"
    mod = load_module(kernel_text(["u32"], "u64", body), "clock")
    mod.start_compile(wait=True)
    assert mod.jit.engine_of("k") == "jit"
    t0 = time.monotonic_ns()
    jit.set_engine("interp")
    a = int(run_snippet(body, [("u32", np.zeros(64, np.uint32))], "u64")[0])
    jit.set_engine("jit")
    b = int(run_snippet(body, [("u32", np.zeros(64, np.uint32))], "u64")[0])
    assert t0 <= a <= b <= time.monotonic_ns()
