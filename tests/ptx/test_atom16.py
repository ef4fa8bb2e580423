"""16-bit atomics (``atomicAdd`` of ``__half``, ``__half2``, ``__nv_bfloat16``; 16-bit
``atomicCAS``), lowered by gdevd/gpu/ptx/atom16.py to a CAS loop on their 32-bit word, on both
engines: every update lands, the neighbouring half of the word is kept, each ``atom``
returns a distinct old value, and malformed forms are refused at load."""

from __future__ import annotations

import numpy as np
import pytest

from gdevd.gpu.ptx import PtxError, load_module

from .helpers import Device, load
from .isa import kernel_text


@pytest.mark.parametrize("name", ["atom16", "atom16.sm90"])
@pytest.mark.parametrize(("blocks", "tpb"), [(1, 32), (4, 96)])
def test_every_thread_adds_once_and_sees_a_distinct_old_value(engine, name, blocks, tpb):
    dev, mod = Device(), load(name)
    n = blocks * tpb
    h, h2, b, u = (dev.put(np.zeros(2, np.uint16)) for _ in range(4))
    old = dev.alloc(2 * n)
    dev.launch(mod, "atoms", (blocks,), (tpb,), h, h2, b, u, old)
    half = n // 2
    assert dev.get(h, 2, np.float16).tolist() == [half, half]
    assert dev.get(h2, 2, np.float16).tolist() == [n, n / 2]
    bf = dev.get(b, 2, np.uint16).astype(np.uint32) << 16
    assert bf.view(np.float32).tolist() == [half, half]
    assert dev.get(u, 2, np.uint16).tolist() == [half, half]
    seen = dev.get(old, n, np.float16)
    for k in (0, 1):
        assert sorted(seen[k::2].tolist()) == list(range(half))


@pytest.mark.parametrize("form", [
    "atom.global.min.f16 %rs1, [%rd1], %rs2;",          # only add is an f16 atomic
    "red.global.cas.b16 [%rd1], %rs1, %rs2;",            # no red.cas
    "atom.global.add.noftz.f16 %rs1, %rd1, %rs2;",      # no memory operand
])
def test_forms_outside_the_isa_are_refused(form):
    text = kernel_text(["u32"], "u32", form, ".reg .b16 %rs<4>;")
    with pytest.raises(PtxError):
        load_module(text, "bad")
