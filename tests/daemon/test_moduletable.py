"""The MODULE_LOAD reply's function table: round trips, padding, and malformed tails."""

from __future__ import annotations

import errno

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from libgdev import abi, moduletable
from libgdev.moduletable import Function, Global, Param

FUNCS = (
    Function("add", (Param(0, 8, 8, "u64"), Param(8, 4, 4, "f32")), 12, 1024, 16, 0, 9, 4,
             65520),
    Function("_Z4noopv", (), 0, 256, 0, 32, 2, 4, 65536),
)
GLOBALS = (Global("launched", 0x1000, 4, "global"), Global("c_sbox", 0x1100, 256, "const"))


def test_round_trip_and_every_record_padded_to_8() -> None:
    raw = moduletable.encode(FUNCS, GLOBALS)
    assert len(raw) % 8 == 0
    assert moduletable.decode(raw, 2, 2) == (FUNCS, GLOBALS)
    # add: 40 + name 8 + 2 params x 24; _Z4noopv: 40 + 8; launched: 24 + 8; c_sbox: 24 + 8
    assert len(raw) == 40 + 8 + 48 + 40 + 8 + 32 + 32


@pytest.mark.parametrize("cut", [1, 8, 47, 100])
def test_truncated_or_padded_tails_are_eproto(cut: int) -> None:
    raw = moduletable.encode(FUNCS, GLOBALS)
    for bad in (raw[:-cut], raw + bytes(cut)):
        with pytest.raises(abi.ProtocolError) as info:
            moduletable.decode(bad, 2, 2)
        assert info.value.errno == errno.EPROTO


def test_nonzero_name_padding_is_eproto() -> None:
    raw = bytearray(moduletable.encode(FUNCS[:1], ()))
    raw[40 + 3] = 1  # after "add"
    with pytest.raises(abi.ProtocolError):
        moduletable.decode(bytes(raw), 1, 0)


@settings(max_examples=300)
@given(st.binary(max_size=300), st.integers(0, 4), st.integers(0, 4))
def test_any_bytes_decode_or_raise_the_protocol_error(data: bytes, nf: int, ng: int) -> None:
    try:
        moduletable.decode(data, nf, ng)
    except abi.ProtocolError as exc:
        assert exc.errno == errno.EPROTO
