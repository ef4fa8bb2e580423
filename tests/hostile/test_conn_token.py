"""D13: a leaked session token cannot be burnt by a thief.

Only the process that opened the device file (its pid, uid and gid, checked with
SO_PEERCRED) consumes the token with HELLO; another process presenting it is refused, the
attempt is logged, and the token stays valid for the opener.
"""

from __future__ import annotations

import errno
import os
import socket

import pytest

from libgdev import abi, gate
from tests.daemon.conftest import run_as, stop_gdevd, unprivileged  # noqa: F401
from tests.hostile.tenants import start_with

pytestmark = pytest.mark.mount


@pytest.fixture(scope="module")
def daemon():
    d = start_with(memory="256M")
    try:
        yield d
    finally:
        stop_gdevd(d)


def _hello(path: str, token: bytes) -> int:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(path)
        s.sendall(abi.encode_request("HELLO", 1, token=token))
        rx = abi.ReceiveBuffer()
        while (frame := rx.next_frame()) is None:
            rx.feed(s.recv(4096))
        return abi.decode_reply(frame)[1]


def test_thief_cannot_burn_a_leaked_token(daemon, unprivileged) -> None:  # noqa: F811
    fd, ticket = gate.open_gate(0, daemon.mount)
    try:
        code = f"""
import socket
rx = libgdev.abi.ReceiveBuffer()
out = []
for _ in range(3):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect({ticket.socket!r})
    s.sendall(libgdev.abi.encode_request("HELLO", 1, token={ticket.token!r}))
    while (f := rx.next_frame()) is None: rx.feed(s.recv(4096))
    out.append(libgdev.abi.decode_reply(f)[1]); s.close()
print(out)
"""
        r = run_as(unprivileged, code, daemon.env())
        assert r.stdout.strip() == str([errno.EACCES] * 3), r.stderr
        if (thief := os.fork()) == 0:  # a thief of the same user but another process
            os._exit(_hello(ticket.socket, ticket.token))
        _, status = os.waitpid(thief, 0)   # not os.wait(): the session has other children
        assert os.waitstatus_to_exitcode(status) == errno.EACCES
        assert _hello(ticket.socket, ticket.token) == 0  # still the opener's
        assert _hello(ticket.socket, ticket.token) == errno.EACCES  # and one-time
    finally:
        os.close(fd)
    assert "presented by pid" in daemon.log_text()
