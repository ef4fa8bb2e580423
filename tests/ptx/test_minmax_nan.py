"""``min``/``max`` with ``.NaN`` (``__hmax_nan``, ``fmaxf`` variants that propagate NaN) on both
engines: a NaN operand gives a NaN; otherwise the smaller/larger operand."""

from __future__ import annotations

import numpy as np
import pytest

from .isa import run_snippet

A = np.array([1.0, np.nan, 2.0, -3.0, np.nan, -0.5, 4.0, np.inf], np.float32)
B = np.array([2.0, 1.0, np.nan, -4.0, np.nan, 0.5, -np.inf, 1.0], np.float32)


@pytest.mark.parametrize("op", ["min", "max"])
@pytest.mark.parametrize("t", ["f32", "f16"])
def test_nan_propagates(engine, op, t):
    dt = {"f32": np.float32, "f16": np.float16}[t]
    a, b = A.astype(dt), B.astype(dt)
    got = run_snippet(f"{op}.NaN.{t} %y, %x0, %x1;", [(t, a), (t, b)], t)
    want = (np.minimum if op == "min" else np.maximum)(a, b)
    assert (np.isnan(got) == np.isnan(want)).all()
    ok = ~np.isnan(want)
    assert (got[ok] == want[ok]).all()


@pytest.mark.parametrize("op", ["min", "max"])
def test_nan_propagates_per_half(engine, op):
    a, b = A.astype(np.float16), B.astype(np.float16)
    pack = lambda x, y: x.view(np.uint16).astype(np.uint32) | (  # noqa: E731
        y.view(np.uint16).astype(np.uint32) << 16)
    got = run_snippet(f"{op}.NaN.f16x2 %y, %x0, %x1;", [("u32", pack(a, b)),
                                                         ("u32", pack(b, a))], "u32")
    f = np.minimum if op == "min" else np.maximum
    lo = (got & 0xFFFF).astype(np.uint16).view(np.float16)
    hi = (got >> 16).astype(np.uint16).view(np.float16)
    for half, want in ((lo, f(a, b)), (hi, f(b, a))):
        assert (np.isnan(half) == np.isnan(want)).all()
        assert (half[~np.isnan(want)] == want[~np.isnan(want)]).all()


@pytest.mark.parametrize("form", ["max.NaN.f32", "min.NaN.f16", "max.NaN.f16x2"])
def test_the_compiled_engine_translates_them(form):
    from gdevd.gpu.ptx import load_module
    from gdevd.gpu.ptx.jit import build

    from .isa import kernel_text
    t = "u32" if form.endswith("x2") else form.rsplit(".", 1)[1]
    mod = load_module(kernel_text([t, t], t, f"{form} %y, %x0, %x1;"), "nan")
    _, kernels, rejected = build._translate(mod)
    assert rejected == {} and list(kernels) == ["k"]
