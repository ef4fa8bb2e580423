"""libgdev.abi as a model: every message round-trips whole and byte at a time; any bytes
either decode or raise ProtocolError; header rules (botching-up-ioctls) are enforced."""

from __future__ import annotations

import errno
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from libgdev import abi


def _values(layout: abi.Layout, draw_int=lambda fmt: 7) -> dict:
    out = {}
    for name, fmt in layout.fields:
        if name.startswith("_pad"):
            continue
        out[name] = b"t" * int(fmt[:-1]) if fmt.endswith("s") else draw_int(fmt)
    return out


def _frames(data: bytes, chunk: int) -> list[abi.Frame]:
    rx = abi.ReceiveBuffer()
    frames = []
    for i in range(0, len(data), chunk):
        rx.feed(data[i:i + chunk])
        while (f := rx.next_frame()) is not None:
            frames.append(f)
    assert len(rx) == 0
    return frames


def test_layout_sizes_are_multiples_of_8() -> None:
    assert abi.HEADER_SIZE == 32
    for cmd in abi.COMMANDS:
        assert cmd.request.struct.size % 8 == 0
        assert cmd.reply.struct.size % 8 == 0


def test_command_numbers_keep_gdevs() -> None:
    gdev = {"GMALLOC": 0x100, "GFREE": 0x101, "GMALLOC_DMA": 0x102, "GFREE_DMA": 0x103,
            "GMEMCPY_TO_DEVICE": 0x106, "GMEMCPY_FROM_DEVICE_ASYNC": 0x109, "GMEMCPY": 0x110,
            "GLAUNCH": 0x112, "GSYNC": 0x113, "GBARRIER": 0x114, "GQUERY": 0x115,
            "GTUNE": 0x116, "GREF": 0x121, "GUNREF": 0x122, "GVIRTGET": 0x124,
            "GET_HANDLE": 0x10}
    for name, number in gdev.items():
        assert abi.BY_NAME[name].number == number
    assert len(abi.BY_NUMBER) == len(abi.COMMANDS) == len(abi.BY_NAME)


@pytest.mark.parametrize("cmd", abi.COMMANDS, ids=lambda c: c.name)
@pytest.mark.parametrize("chunk", [1, 5, 1 << 20])
def test_every_request_and_reply_round_trips(cmd: abi.Command, chunk: int) -> None:
    tail = b"tail-bytes" if cmd.request.tail else b""
    req = abi.encode_request(cmd.name, 42, tail, **_values(cmd.request))
    rtail = b"reply-tail" if cmd.reply.tail else b""
    rep = abi.encode_reply(cmd, 42, cmd.reply.cls(**_values(cmd.reply)), rtail)
    err = abi.encode_error(cmd.number, 43, errno.ENOMEM)
    f_req, f_rep, f_err = _frames(req + rep + err, chunk)
    c, fields, t = abi.decode_request(f_req)
    assert (c, fields._asdict(), t) == (cmd, _values(cmd.request), tail)
    c, status, fields, t = abi.decode_reply(f_rep)
    assert (c, status, fields._asdict(), t) == (cmd, 0, _values(cmd.reply), rtail)
    assert abi.decode_reply(f_err)[:3] == (cmd, errno.ENOMEM, None)
    assert f_req.header.request_id == 42 and f_err.header.request_id == 43


def test_error_reply_carries_the_message() -> None:
    msg = "314572800 bytes exceed vGPU 0's share (268435456) \u2014 \u00e9"
    frame = _frames(abi.encode_error(0x100, 7, errno.ENOMEM, msg), 3)[0]
    cmd, status, fields, tail = abi.decode_reply(frame)
    assert (cmd.name, status, fields, tail.decode()) == ("GMALLOC", errno.ENOMEM, None, msg)


def test_error_message_is_clipped_on_a_character_boundary() -> None:
    msg = "\u00e9" * abi.MSG_MAX  # 2 bytes each: cut in the middle of none
    frame = _frames(abi.encode_error(0x100, 7, errno.EINVAL, msg), 1 << 20)[0]
    tail = abi.decode_reply(frame)[3]
    assert len(tail) == abi.MSG_MAX and tail.decode() == msg[:abi.MSG_MAX // 2]


@pytest.mark.parametrize("status, msg", [
    (0, b"x"), (errno.EINVAL, b"\xff\xfe"), (errno.EINVAL, b"x" * (abi.MSG_MAX + 1))])
def test_malformed_error_messages_are_refused(status: int, msg: bytes) -> None:
    payload = abi.STATUS.pack(status, len(msg)) + msg
    frame = _frames(abi.encode(0x100, 1, payload, abi.FLAG_REPLY), 1 << 20)[0]
    with pytest.raises(abi.ProtocolError) as info:
        abi.decode_reply(frame)
    assert info.value.errno == errno.EPROTO


def test_message_length_must_match_the_payload() -> None:
    payload = abi.STATUS.pack(errno.EINVAL, 4) + b"abcdef"
    frame = _frames(abi.encode(0x100, 1, payload, abi.FLAG_REPLY), 1 << 20)[0]
    with pytest.raises(abi.ProtocolError):
        abi.decode_reply(frame)


def _header(**kw) -> bytes:
    h = dict(magic=abi.MAGIC, version=abi.ABI_VERSION, flags=0, command=0x115,
             payload_len=8, request_id=1, reserved=0)
    h.update(kw)
    return abi.HEADER.pack(*h.values())


@pytest.mark.parametrize("kw, err", [
    (dict(version=1), errno.EPROTONOSUPPORT), (dict(version=abi.ABI_VERSION + 1),
                                               errno.EPROTONOSUPPORT),
    (dict(reserved=1), errno.EINVAL),
    (dict(flags=0x8), errno.EINVAL), (dict(flags=abi.FLAG_REPLY), errno.EINVAL),
    (dict(command=0x999), errno.ENOTTY), (dict(payload_len=4), errno.EINVAL),
    (dict(payload_len=16), errno.EINVAL),
])
def test_bad_headers_are_refused_with_errno(kw: dict, err: int) -> None:
    n = kw.get("payload_len", 8)
    frame = _frames(_header(**kw) + bytes(n), 1 << 20)[0]
    with pytest.raises(abi.ProtocolError) as info:
        abi.decode_request(frame)
    assert info.value.errno == err and not info.value.fatal


def test_nonzero_padding_is_refused() -> None:
    frame = _frames(_header() + struct.pack("<II", 1, 1), 64)[0]
    with pytest.raises(abi.ProtocolError) as info:
        abi.decode_request(frame)
    assert info.value.errno == errno.EINVAL


@pytest.mark.parametrize("data, err", [
    (b"\0" * 32, errno.EPROTO), (_header(payload_len=abi.MAX_PAYLOAD + 1), errno.EMSGSIZE)])
def test_framing_errors_are_fatal(data: bytes, err: int) -> None:
    rx = abi.ReceiveBuffer()
    rx.feed(data)
    with pytest.raises(abi.ProtocolError) as info:
        rx.next_frame()
    assert info.value.fatal and info.value.errno == err


def test_partial_frame_needs_more_data() -> None:
    msg = abi.encode_request("GQUERY", 9, type=1)
    rx = abi.ReceiveBuffer()
    for b in msg[:-1]:
        rx.feed(bytes([b]))
        assert rx.next_frame() is None
    rx.feed(msg[-1:])
    assert rx.next_frame() is not None


def test_encode_rejects_values_that_do_not_fit() -> None:
    with pytest.raises(ValueError):
        abi.encode_request("GMALLOC", 1, size=-1)
    with pytest.raises(ValueError):
        abi.encode_request("GQUERY", 1, tail=b"x", type=1)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_decode_or_raise_protocol_error(data: bytes) -> None:
    rx = abi.ReceiveBuffer()
    rx.feed(data)
    try:
        while (frame := rx.next_frame()) is not None:
            for decode in (abi.decode_request, abi.decode_reply):
                try:
                    decode(frame)
                except abi.ProtocolError as exc:
                    assert exc.errno > 0
    except abi.ProtocolError as exc:
        assert exc.fatal


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(abi.COMMANDS), st.binary(max_size=120), st.integers(0, 3))
def test_any_payload_after_a_valid_header_decodes_or_raises(cmd, payload, flags) -> None:
    data = abi.encode(cmd.number, 1, payload, flags & abi.FLAG_REPLY)
    frame = _frames(data, 7)[0]
    try:
        c, fields, tail = abi.decode_request(frame)
        assert c is cmd and len(payload) >= cmd.request.struct.size
    except abi.ProtocolError as exc:
        assert exc.errno in (errno.EINVAL, errno.ENOTTY, errno.EPROTONOSUPPORT)


def test_simple_request_fast_path_takes_every_tail_less_request() -> None:
    for cmd in abi.COMMANDS:
        if cmd.request.tail:
            continue
        req = abi.parse_simple_request(abi.encode_request(cmd.name, 9, **_values(cmd.request)))
        assert req is not None and req.command is cmd and req.request_id == 9
        assert req.fields == cmd.request.cls(**_values(cmd.request))


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(abi.COMMANDS), st.integers(0, 2**64 - 1), st.binary(max_size=8),
       st.integers(0, 127), st.integers(0, 255))
def test_simple_request_fast_path_agrees_with_the_general_path(cmd, rid, extra, at, xor):
    """Any well-formed request, maybe extended and with one byte flipped: the fast path
    either declines (None) or returns exactly what ReceiveBuffer + decode_request give."""
    data = bytearray(abi.encode_request(cmd.name, rid, **_values(cmd.request)) + extra)
    data[at % len(data)] ^= xor
    fast = abi.parse_simple_request(bytes(data))
    if fast is None:
        return
    frames = _frames(bytes(data), len(data))
    assert len(frames) == 1
    c, fields, tail = abi.decode_request(frames[0])
    assert (c, frames[0].header.request_id, fields, tail) == \
        (fast.command, fast.request_id, fast.fields, b"")


def test_a_lone_frame_and_its_tail_are_views_not_copies() -> None:
    data = bytes(range(256))
    msg = abi.encode_request("GMEMCPY_TO_DEVICE", 9, data, dev_addr=1, size=256,
                             host_offset=0, buf_id=0, host_kind=abi.HOST_INLINE)
    rx = abi.ReceiveBuffer()
    rx.feed(msg)
    frame = rx.next_frame()
    assert isinstance(frame.payload, memoryview) and frame.payload.readonly
    _, fields, tail = abi.decode_request(frame)
    assert isinstance(tail, memoryview) and tail.obj is frame.payload.obj and tail == data
    rx.feed(msg)  # the buffer handed over is not the one that receives next
    assert bytes(frame.payload[-256:]) == data and len(rx) == len(msg)
