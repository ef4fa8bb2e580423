"""sm_90's packed 16-bit integer arithmetic (``add/sub/min/max`` on ``.u16x2``/``.s16x2``,
``min/max.relu.s16x2``; lowered by gdevd/gpu/ptx/packed16.py) on both engines, against numpy
on each half-word, and the forms the ISA does not have rejected at load."""

from __future__ import annotations

import numpy as np
import pytest

from gdevd.gpu.ptx import load_module
from gdevd.gpu.ptx.errors import PtxError

from .isa import kernel_text, run_snippet

N = 256
_NP = {"add": np.add, "sub": np.subtract, "min": np.minimum, "max": np.maximum}


def _inputs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    edges = np.array([0, 1, 0x7FFF, 0x8000, 0xFFFF, 0x8001], np.uint32)
    a = rng.integers(0, 1 << 32, N, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 1 << 32, N, dtype=np.uint64).astype(np.uint32)
    a[:36] = (edges[:, None] | edges[None, :] << 16).ravel()
    b[:36] = np.repeat(edges, 6) << 16 | np.tile(edges, 6)
    return a, b


def _expect(op: str, t: str, a: np.ndarray, b: np.ndarray, relu: bool) -> np.ndarray:
    ht = np.int16 if t == "s16x2" else np.uint16
    ha, hb = a.view(np.uint16).view(ht), b.view(np.uint16).view(ht)
    with np.errstate(over="ignore"):
        r = _NP[op](ha, hb).astype(ht)
    if relu:
        r = np.maximum(r, 0).astype(ht)
    return r.view(np.uint32)


@pytest.mark.parametrize("op", ["add", "sub", "min", "max"])
@pytest.mark.parametrize("t", ["u16x2", "s16x2"])
def test_each_half_word_is_computed_apart(engine, op, t):
    a, b = _inputs()
    got = run_snippet(f"{op}.{t} %y, %x0, %x1;", [("u32", a), ("u32", b)], "u32")
    assert (got == _expect(op, t, a, b, False)).all()


@pytest.mark.parametrize("op", ["min", "max"])
def test_relu_clamps_negative_halves_to_zero(engine, op):
    a, b = _inputs()
    got = run_snippet(f"{op}.relu.s16x2 %y, %x0, %x1;", [("u32", a), ("u32", b)], "u32")
    assert (got == _expect(op, "s16x2", a, b, True)).all()


def test_an_immediate_and_a_guard(engine):
    a, b = _inputs()
    # odd threads: y = a + 0x0001FFFF per half (lo + 0xFFFF, hi + 1); even threads keep b
    body = ("mov.u32 %y, %x1; and.b32 %r1, %gid, 1; setp.ne.u32 %p1, %r1, 0;"
            "@%p1 add.u16x2 %y, %x0, 0x0001FFFF;")
    got = run_snippet(body, [("u32", a), ("u32", b)], "u32")
    want = _expect("add", "u16x2", a, np.full(N, 0x0001FFFF, np.uint32), False)
    odd = np.arange(N) % 2 == 1
    assert (got[odd] == want[odd]).all() and (got[~odd] == b[~odd]).all()


@pytest.mark.parametrize("form", ["mul.lo.u16x2 %y, %x0, %x1;", "add.relu.s16x2 %y, %x0, %x1;",
                                  "max.relu.u16x2 %y, %x0, %x1;",
                                  "add.sat.s16x2 %y, %x0, %x1;"])
def test_forms_the_isa_does_not_have_are_rejected(form):
    with pytest.raises(PtxError, match="packed 16-bit"):
        load_module(kernel_text(["u32", "u32"], "u32", form), "bad")
