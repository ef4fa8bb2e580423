"""`.approx` instructions and fma: the precision the PTX ISA documents, on both engines.

Each test runs on the interpreter and on the compiling engine (conftest.py); under ``jit``
the kernel is checked to run compiled, so the two runs are also a differential check.
Exact references come from float64 numpy (or Python's correctly rounded rationals)."""

from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np
import pytest

from gdevd.gpu.ptx import approx, load_module
from gdevd.gpu.ptx.fma64 import fma_f64

from .helpers import Device
from .isa import kernel_text

RNG = np.random.default_rng(12)
X = np.concatenate([RNG.uniform(-4, 4, 3000), np.exp(RNG.uniform(-80, 80, 1000)),
                    [0.0, 1.0, 2.0, 0.5, 3.0, -1.0]]).astype(np.float32)


def run(engine: str, body: str, inputs, out_type: str) -> np.ndarray:
    """Run ``body`` over the inputs on ``engine``, requiring the compiled form under jit."""
    text = kernel_text([t for t, _ in inputs], out_type, body)
    mod = load_module(text, "approx")
    if engine == "jit":
        mod.start_compile(wait=True)
        assert mod.jit.engine_of("k") == "jit", mod.jit.compiled.rejected
    n = len(inputs[0][1])
    block = 64
    pad = -n % block
    dev = Device(8 << 20)
    ptrs = [dev.put(np.concatenate([np.asarray(a), np.zeros(pad, np.asarray(a).dtype)]))
            for _, a in inputs]
    dt = np.dtype(np.float32 if out_type == "f32" else np.float64)
    out = dev.alloc((n + pad) * dt.itemsize)
    dev.launch(mod, "k", ((n + pad) // block,), (block,), *ptrs, out)
    return dev.get(out, n, dt)


def ulps(got, exact) -> np.ndarray:
    """|got - exact| in units of the float32 ulp at ``exact``."""
    exact = np.asarray(exact, np.float64)
    e = np.frexp(np.abs(exact).astype(np.float32))[1]
    return np.abs(got.astype(np.float64) - exact) / np.ldexp(1.0, e - 24)


def test_ex2_is_within_two_ulp_and_not_correctly_rounded(engine):
    x = X[np.abs(X) < 120]
    got = run(engine, "ex2.approx.f32 %y, %x0;", [("f32", x)], "f32")
    exact = np.exp2(x.astype(np.float64))
    assert ulps(got, exact).max() <= 2
    assert (got != exact.astype(np.float32)).mean() > 0.2   # hardware-like, not exact
    assert got[x == 1.0][0] == 2.0 and got[x == 0.0][0] == 1.0


def test_sin_cos_absolute_error_in_range(engine):
    x = (RNG.uniform(-np.pi, np.pi, 4000)).astype(np.float32)
    for fn, ref in (("sin", np.sin), ("cos", np.cos)):
        got = run(engine, f"{fn}.approx.f32 %y, %x0;", [("f32", x)], "f32")
        err = np.abs(got - ref(x.astype(np.float64)))
        assert err.max() <= 2.0 ** -20.9
        assert (got != ref(x.astype(np.float64)).astype(np.float32)).any()


def test_sin_of_a_large_argument_loses_precision_like_the_hardware(engine):
    x = np.array([1e6, 12345.678, -3e5], np.float32)
    got = run(engine, "sin.approx.f32 %y, %x0;", [("f32", x)], "f32")
    turns = (x * np.float32(1 / (2 * np.pi))).astype(np.float64)   # reduced in float32
    assert np.abs(got - np.sin(2 * np.pi * (turns - np.rint(turns)))).max() < 2.0 ** -20
    assert np.abs(got - np.sin(x.astype(np.float64))).max() > 1e-3


def test_lg2_tanh_rcp_sqrt_rsqrt_bounds(engine):
    pos = np.abs(X[X != 0])
    lg = run(engine, "lg2.approx.f32 %y, %x0;", [("f32", pos)], "f32")
    exact = np.log2(pos.astype(np.float64))
    near1 = (pos >= 0.5) & (pos <= 2)
    assert np.abs(lg - exact)[near1].max() <= 2.0 ** -22.6
    far = ~near1
    assert (np.abs(lg - exact)[far] / np.abs(exact[far])).max() <= 2.0 ** -22
    th = run(engine, "tanh.approx.f32 %y, %x0;", [("f32", X)], "f32")
    ex = np.tanh(X.astype(np.float64))
    nz = ex != 0
    assert (np.abs(th - ex)[nz] / np.abs(ex[nz])).max() <= 2.0 ** -10.987
    for fn, ref, bound in (("rcp", lambda v: 1 / v, 1), ("sqrt", np.sqrt, 1),
                           ("rsqrt", lambda v: 1 / np.sqrt(v), 1)):
        got = run(engine, f"{fn}.approx.f32 %y, %x0;", [("f32", pos)], "f32")
        assert ulps(got, ref(pos.astype(np.float64))).max() <= bound, fn


def test_div_approx_is_a_times_rcp_b_and_zero_beyond_2_126(engine):
    a = np.array([1.0, 3.0, np.inf, 7.0], np.float32)
    b = np.array([3.0, 2.0 ** 127, 2.0 ** 127, 2.0 ** 125], np.float32)
    got = run(engine, "div.approx.f32 %y, %x0, %x1;", [("f32", a), ("f32", b)], "f32")
    assert got[1] == 0 and np.isnan(got[2]) and got[3] != 0
    assert ulps(got[[0, 3]], a[[0, 3]].astype(np.float64) / b[[0, 3]]).max() <= 2
    full = run(engine, "div.full.f32 %y, %x0, %x1;", [("f32", a), ("f32", b)], "f32")
    assert full[1] != 0 and ulps(full[:2], a[:2].astype(np.float64) / b[:2]).max() <= 2


def test_rcp_approx_f64_follows_the_isa_procedure(engine):
    x = np.array([3.0, np.pi, -7.5, 1e300, 1e-310], np.float64)
    got = run(engine, "rcp.approx.ftz.f64 %y, %x0;", [("f64", x)], "f64")
    assert (got.view(np.uint64) & np.uint64(0xFFFFFFFF)).max() == 0   # 1.11.20 result
    assert np.abs(got[:4] * x[:4] - 1).max() < 2.0 ** -19 and np.isinf(got[4])


def _libm_fma():
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    libm.fma.restype = ctypes.c_double
    libm.fma.argtypes = [ctypes.c_double] * 3
    return libm.fma


def test_fma_f64_is_single_rounded(engine):
    n = 2048
    a = RNG.standard_normal(n) * np.exp2(RNG.integers(-40, 40, n))
    b = RNG.standard_normal(n)
    c = -a * b * (1 + 1e-15 * RNG.standard_normal(n))   # cancellation shows double rounding
    got = run(engine, "fma.rn.f64 %y, %x0, %x1, %x2;",
              [("f64", a), ("f64", b), ("f64", c)], "f64")
    fma = _libm_fma()
    expect = np.array([fma(x, y, z) for x, y, z in zip(a, b, c, strict=True)])
    assert got.tolist() == expect.tolist()
    assert (a * b + c != expect).any()   # the double-rounded answer would differ


@pytest.mark.parametrize("engine", ["interp"], indirect=True)
def test_fma_f64_emulation_against_libm_over_the_exponent_range(engine):
    n = 20000
    e = np.where(RNG.random(n) < 0.3, RNG.integers(-1074, 1000, n), RNG.integers(-60, 60, n))
    a = RNG.uniform(-2, 2, n) * np.exp2(e.astype(float))
    b = RNG.uniform(-2, 2, n) * np.exp2(RNG.integers(-600, 600, n).astype(float))
    with np.errstate(over="ignore"):
        c = np.where(RNG.random(n) < 0.5, -(a * b), RNG.uniform(-1, 1, n))
    c = np.where(np.isfinite(c), c, 1.0)
    fma = _libm_fma()
    expect = np.array([fma(x, y, z) for x, y, z in zip(a, b, c, strict=True)])
    got = fma_f64(a, b, c)
    assert (got.view(np.uint64) == expect.view(np.uint64)).all()
    assert approx.quantize(np.array([1.0 + 2.0 ** -30]), 23)[0] == 1.0


def test_fma_f32_directed_modes_round_once(engine):
    # exact 1 + 2^-23 - 2^-80: float64 would round it up to 1 + 2^-23 before the rz/rm step
    a = np.array([1 + 2.0 ** -23, 1 + 2.0 ** -23, 1.0], np.float32)
    b = np.array([1.0, 1.0, 1.0], np.float32)
    c = np.array([-(2.0 ** -80), 2.0 ** -80, 2.0 ** -80], np.float32)
    up = np.float32(1 + 2.0 ** -23)
    for mode, expect in (("rz", [1.0, up, 1.0]), ("rm", [1.0, up, 1.0]),
                         ("rp", [up, np.nextafter(up, np.float32(2)), up])):
        got = run(engine, f"fma.{mode}.f32 %y, %x0, %x1, %x2;",
                  [("f32", a), ("f32", b), ("f32", c)], "f32")
        assert got.tolist() == np.array(expect, np.float32).tolist(), mode
