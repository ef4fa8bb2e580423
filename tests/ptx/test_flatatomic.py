"""flat_atomic (shared-memory atomics) against a one-element-at-a-time Python model."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gdevd.gpu.ptx import flatatomic as fa

OPS = [fa.ATOM_ADD, fa.ATOM_MIN, fa.ATOM_MAX, fa.ATOM_EXCH, fa.ATOM_CAS, fa.ATOM_AND,
       fa.ATOM_OR, fa.ATOM_XOR, fa.ATOM_INC, fa.ATOM_DEC]


def model(mem: list[int], slots: list[int], op: int, a: list[int], b: list[int], bits: int,
          signed: bool):
    mask = (1 << bits) - 1
    mem = list(mem)
    old = []

    def norm(v):
        v &= mask
        return v - (1 << bits) if signed and v >> (bits - 1) else v
    for s, x, y in zip(slots, a, b):
        cur = mem[s]
        old.append(cur)
        new = {fa.ATOM_ADD: cur + x, fa.ATOM_MIN: min(cur, x), fa.ATOM_MAX: max(cur, x),
               fa.ATOM_EXCH: x, fa.ATOM_CAS: y if cur == x else cur, fa.ATOM_AND: cur & x,
               fa.ATOM_OR: cur | x, fa.ATOM_XOR: cur ^ x,
               fa.ATOM_INC: 0 if cur >= x else cur + 1,
               fa.ATOM_DEC: x if cur == 0 or cur > x else cur - 1}[op]
        mem[s] = norm(new)
    return mem, old


@settings(max_examples=50, deadline=None)
@given(op=st.sampled_from(OPS), typ=st.sampled_from([fa.T_U32, fa.T_S32, fa.T_U64]),
       data=st.data())
def test_matches_serial_model(op, typ, data):
    dt = fa.ATOM_DTYPES[typ]
    bits = dt.itemsize * 8
    signed = dt.kind == "i"
    lo, hi = (-(1 << bits - 1), (1 << bits - 1) - 1) if signed else (0, (1 << bits) - 1)
    if op in (fa.ATOM_INC, fa.ATOM_DEC):
        lo, hi = 0, 20
    n = data.draw(st.integers(1, 60))
    nslots = data.draw(st.integers(1, 6))
    slots = data.draw(st.lists(st.integers(0, nslots - 1), min_size=n, max_size=n))
    vals = st.integers(lo, hi)
    a = data.draw(st.lists(vals, min_size=n, max_size=n))
    b = data.draw(st.lists(vals, min_size=n, max_size=n))
    init = data.draw(st.lists(vals, min_size=nslots, max_size=nslots))
    buf = np.array(init, dtype=dt).view(np.uint8).copy()
    old = fa.flat_atomic(buf, np.array(slots) * dt.itemsize, op, typ, np.array(a, dt),
                         np.array(b, dt) if op == fa.ATOM_CAS else None)
    exp_mem, exp_old = model(init, slots, op, a, b, bits, signed)
    assert buf.view(dt).tolist() == exp_mem
    assert old.tolist() == exp_old


def test_float_add_is_serial_in_order():
    vals = np.array([1e8, 1.0, -1e8, 1.0] * 50, dtype=np.float32)
    buf = np.zeros(4, np.uint8)
    old = fa.flat_atomic(buf, np.zeros(vals.size, np.int64), fa.ATOM_ADD, fa.T_F32, vals)
    acc = np.float32(0)
    exp = []
    for v in vals:
        exp.append(acc)
        acc = np.float32(acc + v)
    assert old.tolist() == exp and buf.view(np.float32)[0] == acc
