"""sm_70's ``bmsk`` (thrust's radix sort uses it) on both engines, against the PTX ISA's
definition written out here bit by bit."""

from __future__ import annotations

import numpy as np
import pytest

from gdevd.gpu.ptx import load_module
from gdevd.gpu.ptx.errors import PtxError

from .isa import kernel_text, run_snippet

VALUES = np.array([0, 1, 2, 5, 16, 27, 31, 32, 33, 40, 63, 64, 255, 1 << 31, 0xFFFFFFFF],
                  np.uint32)


def _reference(a: int, b: int, clamp: bool) -> int:
    a1, b1 = a & 31, b & 31
    if clamp and (a >= 32 or b >= 32):
        width = 32 - a if a < 32 else 0     # a width of 32 or more: every bit from a
        return ((1 << width) - 1) << a & 0xFFFFFFFF if width else 0
    if a1 + b1 >= 32:
        return (0xFFFFFFFF << a1) & 0xFFFFFFFF
    return ((1 << b1) - 1) << a1


@pytest.mark.parametrize("mode", ["clamp", "wrap"])
def test_bmsk_is_the_isas(engine, mode):
    a, b = (x.ravel() for x in np.meshgrid(VALUES, VALUES))
    got = run_snippet(f"bmsk.{mode}.b32 %y, %x0, %x1;", [("u32", a), ("u32", b)], "u32")
    want = [_reference(int(x), int(y), mode == "clamp") for x, y in zip(a, b, strict=True)]
    assert got.tolist() == want


def test_the_isas_example():
    assert _reference(1, 2, False) == 6


@pytest.mark.parametrize("form", ["bmsk.b32 %y, %x0, %x1;", "bmsk.clamp.u32 %y, %x0, %x1;",
                                  "bmsk.clamp.wrap.b32 %y, %x0, %x1;"])
def test_malformed_bmsk_is_rejected(form):
    with pytest.raises(PtxError, match="bmsk"):
        load_module(kernel_text(["u32", "u32"], "u32", form), "bad")
