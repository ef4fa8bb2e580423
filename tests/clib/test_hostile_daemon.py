"""libgdev.so validates every reply: a daemon (here a fake one on a socket the ticket names)
that answers with malformed frames gets a failed call with a reason, never a crash or a
read past the frame (the program runs under ASan/UBSan)."""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import threading
from pathlib import Path

import pytest

from libgdev import abi
from libgdev.gate import Ticket, format_ticket
from tests.clib.cbuild import sanitizer_env


def _hello_ok(rid: int) -> bytes:
    return abi.encode_reply(abi.HELLO, rid, abi.HelloReply(session=1, minor=0))


def _query(rid: int) -> bytes:
    return abi.encode_reply(abi.GQUERY, rid, abi.Result(result=64 << 20))


BAD_REPLIES = {
    "bad-magic": lambda rid: b"XXXX" + _query(rid)[4:],
    "oversized": lambda rid: _query(rid)[:12] + struct.pack("<I", abi.MAX_PAYLOAD + 1)
    + _query(rid)[16:],
    "wrong-request-id": lambda rid: _query(rid + 7),
    "wrong-command": lambda rid: abi.encode_reply(abi.GMALLOC, rid, abi.Addr(addr=1)),
    "truncated": lambda rid: _query(rid)[:12] + struct.pack("<I", 8) + _query(rid)[16:40],
    "long-message": lambda rid: abi.encode(abi.BY_NAME["GQUERY"].number, rid,
                                           abi.STATUS.pack(22, 5000) + b"x" * 100,
                                           abi.FLAG_REPLY),
    "negative-status": lambda rid: abi.encode(abi.BY_NAME["GQUERY"].number, rid,
                                              abi.STATUS.pack(-5, 0), abi.FLAG_REPLY),
    "hang-up": lambda rid: b"",
}


class FakeDaemon:
    """Accepts one client, answers HELLO properly and its next request with ``reply``."""

    def __init__(self, root: Path, reply) -> None:
        self.path = str(root / "ioctl.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(1)
        os.makedirs(root / "dev")
        ticket = Ticket(0, self.path, bytes(abi.TOKEN_SIZE))
        (root / "dev" / "gdev0").write_bytes(format_ticket(ticket))
        self.reply = reply
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _request(self, conn: socket.socket) -> int:
        head = conn.recv(abi.HEADER_SIZE, socket.MSG_WAITALL)
        h = abi.Header._make(abi.HEADER.unpack(head))
        if h.payload_len:
            conn.recv(h.payload_len, socket.MSG_WAITALL)
        return h.request_id

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            conn.sendall(_hello_ok(self._request(conn)))
            data = self.reply(self._request(conn))
            if data:
                conn.sendall(data)
            conn.shutdown(socket.SHUT_WR)
            conn.recv(1)  # until the client closes


REASONS = {
    "bad-magic": "bad magic", "oversized": "oversized reply",
    "wrong-request-id": "out of step", "wrong-command": "out of step",
    "truncated": "wrong size", "long-message": "malformed reply status",
    "negative-status": "malformed reply status", "hang-up": "closed the session",
}


@pytest.mark.parametrize("case", sorted(BAD_REPLIES))
def test_malformed_reply_fails_the_call(programs, tmp_path, case: str) -> None:
    fake = FakeDaemon(tmp_path, BAD_REPLIES[case])
    exe = programs.get("madd_gdev", sanitized=True)
    ptx = tmp_path / "k.ptx"
    ptx.write_text(".version 7.0\n")
    env = sanitizer_env({"GDEV_MOUNT": str(tmp_path), "PATH": "/usr/bin"})
    env["ASAN_OPTIONS"] += ":detect_leaks=0"  # madd_gdev returns without gclose on failure
    res = subprocess.run([str(exe), str(ptx), "4"], env=env, capture_output=True, text=True,
                         timeout=60)
    fake.thread.join(10)
    assert res.returncode == 1, res.stdout + res.stderr  # 99 would be a sanitizer report
    assert "madd: gquery failed: " in res.stderr
    assert REASONS[case] in res.stderr, res.stderr
