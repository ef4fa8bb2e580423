"""Atomics (page-table and flat) against a serial Python model, and their argument checks."""

from __future__ import annotations

import errno
import struct

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

from gdevd.errors import GdevError, MmuFault
from gdevd.gpu import mmu as M
from gdevd.gpu.mmu import Mmu, atomic_flat_v

INT_TYPES = {M.T_U32: (32, False), M.T_S32: (32, True), M.T_U64: (64, False),
             M.T_S64: (64, True)}
INT_OPS = [M.ATOM_ADD, M.ATOM_MIN, M.ATOM_MAX, M.ATOM_EXCH, M.ATOM_CAS, M.ATOM_AND,
           M.ATOM_OR, M.ATOM_XOR, M.ATOM_INC, M.ATOM_DEC]
BUF = 64


def model_int(op: int, bits: int, signed: bool, old: int, a: int, b: int) -> int:
    """The new value of one integer atomic (values as Python ints of the element type)."""
    mask = (1 << bits) - 1

    def wrap(x: int) -> int:
        x &= mask
        return x - (1 << bits) if signed and x >> (bits - 1) else x

    return wrap({
        M.ATOM_ADD: lambda: old + a, M.ATOM_MIN: lambda: min(old, a),
        M.ATOM_MAX: lambda: max(old, a), M.ATOM_EXCH: lambda: a,
        M.ATOM_CAS: lambda: b if old == a else old, M.ATOM_AND: lambda: old & a,
        M.ATOM_OR: lambda: old | a, M.ATOM_XOR: lambda: old ^ a,
        M.ATOM_INC: lambda: 0 if old >= a else old + 1,
        M.ATOM_DEC: lambda: a if old == 0 or old > a else old - 1,
    }[op]())


def run_model(mem: bytearray, offs: list[int], op: int, typ: int, a: list, b: list | None):
    """Apply the ops serially to ``mem``; return the old values."""
    dt = M.ATOMIC_DTYPES[typ]
    olds = []
    for i, off in enumerate(offs):
        old = np.frombuffer(mem, dt, 1, off)[0].item()
        if dt.kind == "f":
            new = a[i] if op == M.ATOM_EXCH else dt.type(old) + dt.type(a[i])
        else:
            new = model_int(op, *INT_TYPES[typ], old, a[i], b[i] if b else 0)
        mem[off:off + dt.itemsize] = np.array([new], dt).tobytes()
        olds.append(old)
    return olds


def operands(typ: int) -> st.SearchStrategy:
    if typ in (M.T_F32, M.T_F64):
        width = 32 if typ == M.T_F32 else 64
        return st.floats(-1e6, 1e6, width=width)
    bits, signed = INT_TYPES[typ]
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    # small values make MIN/MAX/INC/DEC/CAS hit their edges; big ones wrap
    return st.one_of(st.integers(-3 if signed else 0, 5), st.integers(lo, hi))


@st.composite
def atomic_cases(draw: st.DrawFn):
    typ = draw(st.sampled_from(sorted(M.ATOMIC_DTYPES)))
    op = draw(st.sampled_from([M.ATOM_ADD, M.ATOM_EXCH] if typ in (M.T_F32, M.T_F64)
                              else INT_OPS))
    w = M.ATOMIC_DTYPES[typ].itemsize
    n = draw(st.integers(0, 12))
    offs = draw(st.lists(st.integers(0, BUF // w - 1).map(lambda i: i * w),
                         min_size=n, max_size=n))  # repeats: order matters
    a = draw(st.lists(operands(typ), min_size=n, max_size=n))
    b = draw(st.lists(operands(typ), min_size=n, max_size=n)) if op == M.ATOM_CAS else None
    init = draw(st.binary(min_size=BUF, max_size=BUF))
    if typ in (M.T_F32, M.T_F64):  # start from finite floats
        fmt = "f" if typ == M.T_F32 else "d"
        vals = draw(st.lists(operands(typ), min_size=BUF // w, max_size=BUF // w))
        init = struct.pack(f"<{len(vals)}{fmt}", *vals)
    return typ, op, offs, a, b, init


@settings(max_examples=100, deadline=None)
@given(case=atomic_cases(), flat=st.booleans())
def test_atomics_match_serial_model(case, flat: bool) -> None:
    typ, op, offs, a, b, init = case
    mem = bytearray(init)
    want_old = run_model(mem, offs, op, typ, a, b)
    buf = np.frombuffer(bytearray(init), np.uint8)
    if flat:
        old = atomic_flat_v(buf, np.array(offs, np.uint64), op, typ, a, b)
    else:
        with Mmu() as mmu:
            page = np.zeros(M.PAGE_SIZE, np.uint8)
            page[:BUF] = buf
            mmu.set_aperture(3, page)
            mmu.map(0x5000, 0, M.PAGE_SIZE, aperture=3)
            old = mmu.atomic_v(np.array(offs, np.uint64) + 0x5000, op, typ, a, b)
            buf = page[:BUF]
    assert old.dtype == M.ATOMIC_DTYPES[typ]
    assert old.tolist() == want_old
    assert buf.tobytes() == bytes(mem)


def test_inc_dec_wrap_like_cuda() -> None:
    buf = np.zeros(8, np.uint8)
    offs = np.zeros(5, np.uint64)
    assert atomic_flat_v(buf, offs, M.ATOM_INC, M.T_U32, 2).tolist() == [0, 1, 2, 0, 1]
    assert atomic_flat_v(buf, offs, M.ATOM_DEC, M.T_U32, 2).tolist() == [2, 1, 0, 2, 1]


def test_float_add_accumulates() -> None:
    buf = np.zeros(8, np.uint8)
    atomic_flat_v(buf, np.zeros(4, np.uint64), M.ATOM_ADD, M.T_F64, 0.25)
    assert buf.view(np.float64)[0] == 1.0


@pytest.mark.parametrize("op,typ,b", [
    (M.ATOM_MIN, M.T_F32, None), (M.ATOM_CAS, M.T_F64, 1.0), (M.ATOM_CAS, M.T_U32, None),
    (M.ATOM_ADD, M.T_U32, 1), (99, M.T_U32, None), (M.ATOM_ADD, 17, None),
])
def test_bad_atomic_arguments(op: int, typ: int, b) -> None:
    with pytest.raises(GdevError) as info:
        atomic_flat_v(np.zeros(8, np.uint8), np.zeros(1, np.uint64), op, typ, 1, b)
    assert info.value.errno == errno.EINVAL


def test_flat_bounds_and_alignment() -> None:
    buf = np.zeros(16, np.uint8)
    with pytest.raises(MmuFault) as info:
        atomic_flat_v(buf, np.array([0, 12, 16], np.uint64), M.ATOM_ADD, M.T_U32, 1)
    assert (info.value.index, info.value.reason, info.value.va) == (2, "unmapped", 16)
    with pytest.raises(MmuFault) as info:
        atomic_flat_v(buf, np.array([2], np.uint64), M.ATOM_ADD, M.T_U32, 1)
    assert info.value.reason == "misaligned"
    assert buf.view(np.uint32).tolist() == [1, 0, 0, 1]  # elements before the fault ran
    with pytest.raises(GdevError):
        atomic_flat_v(buf.view(np.uint32), np.zeros(1, np.uint64), M.ATOM_ADD, M.T_U32, 1)


def test_atomic_needs_read_and_write_access() -> None:
    with Mmu() as mmu:
        mmu.set_aperture(0, np.zeros(M.PAGE_SIZE, np.uint8))
        mmu.map(0, 0, M.PAGE_SIZE, flags=M.ACC_READ)
        with pytest.raises(MmuFault) as info:
            mmu.atomic_v(np.array([8], np.uint64), M.ATOM_ADD, M.T_U32, 1)
        assert info.value.reason == "protection"
