"""Hypothesis fuzzing of raw messages on the ioctl socket of a real daemon.

Each example opens a fresh session, sends one attack (garbage, truncated or oversized frames,
wrong version, nonzero reserved fields, unknown commands, copies naming ranges outside the
shared buffers, wrong or replayed tokens), and checks that the daemon answers with an errno or
closes that session only, while a bystander session keeps working and holds its memory.
"""

from __future__ import annotations

import errno
import os
import socket

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import libgdev
from libgdev import abi, gate

pytestmark = pytest.mark.mount
TIMEOUT = 10.0


class Raw:
    """A session driven byte by byte."""

    def __init__(self, mount: str, hello: bool = True) -> None:
        self.fd, self.ticket = gate.open_gate(0, mount)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(TIMEOUT)
        self.sock.connect(self.ticket.socket)
        self.rx = abi.ReceiveBuffer()
        if hello:
            self.sock.sendall(abi.encode_request("HELLO", 0, token=self.ticket.token))
            assert self.reply()[1] == 0

    def reply(self) -> tuple[abi.Frame, int] | None:
        """The next reply (frame, status), or None if the daemon closed the session."""
        while (frame := self.rx.next_frame()) is None:
            try:
                data = self.sock.recv(1 << 20)
            except ConnectionResetError:
                return None
            if not data:
                return None
            self.rx.feed(data)
        return frame, abi.decode_reply(frame)[1]

    def close(self) -> None:
        self.sock.close()
        os.close(self.fd)


@pytest.fixture(scope="module")
def bystander(gdevd):
    """A healthy client on the same vGPU holding memory through the whole fuzzing."""
    with libgdev.gopen(0, gdevd.mount) as h:
        addr = h.gmalloc(4096)
        h.gmemcpy_to_device(addr, b"b" * 4096)
        yield h, addr


def _check_bystander(bystander) -> None:
    h, addr = bystander
    out = bytearray(4096)
    h.gmemcpy_from_device(out, addr)
    assert out == b"b" * 4096


def _header(command: int, payload_len: int, version: int = abi.ABI_VERSION, flags: int = 0,
            reserved: int = 0, magic: int = abi.MAGIC) -> bytes:
    return abi.HEADER.pack(magic, version, flags, command, payload_len, 1, reserved)


COMMANDS = st.sampled_from([c.number for c in abi.COMMANDS]) | st.integers(0, 2**32 - 1)
U64 = st.integers(0, 2**64 - 1)

attacks = st.one_of(
    st.binary(min_size=1, max_size=300).map(lambda b: ("garbage", b)),
    st.tuples(COMMANDS, st.binary(max_size=200)).map(
        lambda t: ("payload", _header(t[0], len(t[1])) + t[1])),
    st.tuples(COMMANDS, st.integers(0, 2**16 - 1).filter(lambda v: v != abi.ABI_VERSION)).map(
        lambda t: ("version", _header(t[0], 8, version=t[1]) + bytes(8))),
    st.tuples(COMMANDS, st.integers(1, 2**64 - 1)).map(
        lambda t: ("reserved", _header(t[0], 8, reserved=t[1]) + bytes(8))),
    st.tuples(COMMANDS, st.integers(1, 2**16 - 1)).map(
        lambda t: ("flags", _header(t[0], 8, flags=t[1]) + bytes(8))),
    st.integers(abi.MAX_PAYLOAD + 1, 2**32 - 1).map(
        lambda n: ("oversized", _header(0x115, n))),
    st.tuples(st.sampled_from(["GMEMCPY_TO_DEVICE", "GMEMCPY_FROM_DEVICE",
                               "GMEMCPY_TO_DEVICE_ASYNC", "GMEMCPY_FROM_DEVICE_ASYNC"]),
              U64, st.integers(0, 1 << 26), U64, st.integers(0, 5), st.integers(0, 4)).map(
        lambda t: ("range", abi.encode_request(t[0], 1, dev_addr=0x20000000, size=t[2],
                                               host_offset=t[1], buf_id=t[4],
                                               host_kind=t[3] % 4))),
    st.tuples(U64, U64).map(lambda t: ("gfree", abi.encode_request("GFREE", 1, addr=t[0]))),
)


def _send_and_judge(raw: Raw, kind: str, data: bytes) -> None:
    raw.sock.sendall(data)
    if kind == "garbage" and len(data) < abi.HEADER_SIZE:
        raw.sock.shutdown(socket.SHUT_WR)  # truncated: the daemon sees EOF mid-frame
    result = raw.reply()
    if result is None:
        assert kind in ("garbage", "oversized", "payload"), f"{kind} closed the session"
        return
    frame, status = result
    if kind in ("version", "reserved", "flags"):
        assert status in (errno.EPROTONOSUPPORT, errno.EINVAL), status
    if kind == "range":
        assert status in (0, errno.EINVAL, errno.EFAULT, errno.ENOENT, errno.EBADF), status


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(attack=attacks)
def test_fuzzed_messages_get_an_errno_or_close_only_their_session(gdevd, bystander,
                                                                  attack) -> None:
    kind, data = attack
    raw = Raw(gdevd.mount)
    try:
        _send_and_judge(raw, kind, data)
    finally:
        raw.close()
    _check_bystander(bystander)


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(cut=st.integers(1, 60), name=st.sampled_from(["GQUERY", "GMALLOC", "GLAUNCH"]))
def test_truncated_messages_then_eof(gdevd, bystander, cut: int, name: str) -> None:
    fields = {f: 1 for f, _ in abi.BY_NAME[name].request.fields if not f.startswith("_")}
    msg = abi.encode_request(name, 1, tail=b"k" if name == "GLAUNCH" else b"", **fields)
    raw = Raw(gdevd.mount)
    try:
        raw.sock.sendall(msg[:min(cut, len(msg) - 1)])
        raw.sock.shutdown(socket.SHUT_WR)
        assert raw.reply() is None
    finally:
        raw.close()
    _check_bystander(bystander)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(token=st.binary(min_size=abi.TOKEN_SIZE, max_size=abi.TOKEN_SIZE))
def test_wrong_tokens_are_refused(gdevd, bystander, token: bytes) -> None:
    raw = Raw(gdevd.mount, hello=False)
    try:
        raw.sock.sendall(abi.encode_request("HELLO", 1, token=token))
        assert raw.reply()[1] == errno.EACCES
        raw.sock.sendall(abi.encode_request("GMALLOC", 2, size=4096))
        assert raw.reply()[1] == errno.EACCES
    finally:
        raw.close()
    _check_bystander(bystander)


def test_daemon_memory_is_back_after_fuzzing(gdevd, bystander) -> None:
    with open(gdevd.proc_path("vd0", "memory_used")) as f:
        assert int(f.read()) == 4096  # the bystander's page only

