"""Helpers for hostile-tenant tests of the daemon side: a daemon with chosen limits, a
bystander tenant whose results must stay correct, raw sessions that keep the memfds the
daemon passes, and the daemon's resident memory.

Each attack test ends the same way: the daemon is alive, the bystander reads back exactly
what it wrote, and the daemon's RSS has come back near its baseline (:func:`settled_rss`).
"""

from __future__ import annotations

import array
import os
import socket
import tempfile
import time

import numpy as np

import libgdev
from libgdev import abi, gate
from tests.daemon.conftest import Gdevd, start_gdevd

TIMEOUT = 10.0
RSS_TOLERANCE = 0.10  # daemon RSS after an attack: within 10 % of its baseline


def start_with(**config: object) -> Gdevd:
    """Start gdevd with GdevConfig ``config`` fields written to a TOML file."""
    fd, path = tempfile.mkstemp(prefix="gdevd-hostile-", suffix=".toml")
    with os.fdopen(fd, "w") as f:
        for key, value in config.items():
            f.write(f"{key} = {value!r}\n" if not isinstance(value, str) else
                    f'{key} = "{value}"\n')
    try:
        return start_gdevd("--config", path)
    finally:
        os.unlink(path)


class Bystander:
    """An honest tenant on vGPU ``minor``: holds device memory filled with a known pattern."""

    SIZE = 256 << 10

    def __init__(self, mount: str, minor: int = 1) -> None:
        self.handle = libgdev.gopen(minor, mount)
        self.pattern = np.random.default_rng(minor).integers(0, 256, self.SIZE, np.uint8)
        self.addr = self.handle.gmalloc(self.SIZE)
        self.handle.gmemcpy_to_device(self.addr, self.pattern)

    def check(self) -> None:
        """Assert the daemon still serves this tenant and its bytes are intact; then a new
        round trip (a fresh write and read) works too."""
        out = np.zeros(self.SIZE, np.uint8)
        self.handle.gmemcpy_from_device(out, self.addr)
        assert np.array_equal(out, self.pattern), "the bystander's memory changed"
        self.pattern = self.pattern[::-1].copy()
        self.handle.gmemcpy_to_device(self.addr, self.pattern)

    def close(self) -> None:
        self.handle.gclose()


class RawSession:
    """A session driven message by message, keeping the fds the daemon passes."""

    def __init__(self, mount: str, minor: int = 0, hello: bool = True) -> None:
        self.fd, self.ticket = gate.open_gate(minor, mount)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(TIMEOUT)
        self.sock.connect(self.ticket.socket)
        self.rx = abi.ReceiveBuffer()
        self.fds: list[int] = []
        self.rid = 0
        if hello:
            status, _ = self.call("HELLO", token=self.ticket.token)
            assert status == 0

    def call(self, name: str, tail: bytes = b"", **fields: object) -> tuple[int, object]:
        """Send one request; (status, reply fields) of its reply."""
        self.rid += 1
        self.sock.sendall(abi.encode_request(name, self.rid, tail, **fields))
        while (frame := self.rx.next_frame()) is None:
            data, anc, _, _ = self.sock.recvmsg(1 << 20, socket.CMSG_SPACE(16))
            for level, kind, payload in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds = array.array("i")
                    fds.frombytes(payload[:len(payload) - len(payload) % 4])
                    self.fds.extend(fds)
            if not data:
                raise ConnectionResetError("the daemon closed the session")
            self.rx.feed(data)
        _, status, fields, _ = abi.decode_reply(frame)
        return status, fields

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.sock.close()
        os.close(self.fd)


def rss_kib(pid: int) -> int:
    """Resident set size of process ``pid`` in KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise ProcessLookupError(pid)


def settled_rss(pid: int, baseline: int, rounds: int = 50) -> int:
    """The daemon's RSS once it is back within :data:`RSS_TOLERANCE` of ``baseline``, or its
    last value after ``rounds`` samples (the caller asserts on it; memory is given back by
    session teardown in the daemon's loop, so it may take a few samples to show)."""
    rss = rss_kib(pid)
    for _ in range(rounds):
        if rss <= baseline * (1 + RSS_TOLERANCE):
            break
        time.sleep(0.1)
        rss = rss_kib(pid)
    return rss
