"""Spin, then block: libgdev.spin's backoff, the daemon's BusyPoll guards, and the client's
polling receive (replies that come late, or in pieces, are still read whole)."""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time

import pytest
import trio

from gdevd import runtime as rt
from gdevd.ioctl.busypoll import BusyPoll
from gdevd.ioctl.server import IoctlServer
from gdevd.ioctl.session import Opener, SessionTable
from libgdev import abi, connection
from libgdev.connection import Connection
from libgdev.spin import AdaptiveSpin


class Config:
    def __init__(self, us: int) -> None:
        self.ioctl_poll_us = us


def test_adaptive_spin_recovers_on_a_hit() -> None:
    spin = AdaptiveSpin()
    assert spin.should()
    spin.done(False)  # miss: skip 1
    assert not spin.should() and spin.should()
    spin.done(False)  # miss: skip 2
    assert not spin.should() and not spin.should() and spin.should()
    spin.done(True)  # hit: back to polling every time, and the next miss skips 1 again
    assert all(spin.should() for _ in range(100))
    spin.done(False)
    assert not spin.should() and spin.should()


def test_adaptive_spin_sequence_of_misses() -> None:
    spin, waits = AdaptiveSpin(), []
    for _ in range(200):
        tried = spin.should()
        waits.append(tried)
        if tried:
            spin.done(False)
    gaps = [len(run) for run in "".join("x" if w else "." for w in waits).split("x")[1:-1]]
    assert gaps[:8] == [1, 2, 4, 8, 16, 32, 64, 64]


def _pair(poll: BusyPoll) -> tuple[socket.socket, socket.socket]:
    a, b = socket.socketpair()
    a.setblocking(False)
    poll.add(a)
    return a, b


def test_busy_poll_receives_what_is_there_and_times_out_on_silence() -> None:
    async def main() -> None:
        poll = BusyPoll(Config(300))
        a, b = _pair(poll)
        buf, spin = bytearray(64), AdaptiveSpin()
        b.send(b"hello")
        assert poll.receive(a, buf, spin) == 5 and buf[:5] == b"hello"
        t = time.perf_counter()
        assert poll.receive(a, buf, spin) == -1
        assert time.perf_counter() - t >= 300e-6
        assert (poll.hits, poll.misses) == (1, 1)
        assert not spin.should()  # backing off after the miss
        b.close()
        assert poll.receive(a, buf, spin) == 0  # EOF reads as 0 bytes
        poll.remove(a)
        a.close()
    trio.run(main)


def test_busy_poll_yields_to_other_connections_runnable_tasks_and_a_zero_window() -> None:
    async def main() -> None:
        config = Config(100_000)  # far beyond the limit: a poll that waited would show
        poll = BusyPoll(config)
        (a, b), (c, d) = _pair(poll), _pair(poll)
        buf, spin = bytearray(64), AdaptiveSpin()
        d.send(b"x")  # another connection has a request waiting
        t = time.perf_counter()
        assert poll.receive(a, buf, spin) == -1
        assert time.perf_counter() - t < 0.05 and poll.misses == 0 and spin.should()
        c.recv(1)
        b.send(b"y")
        config.ioctl_poll_us = 0
        assert poll.receive(a, buf, spin) == -1  # off: not even data already there is read
        config.ioctl_poll_us = 100
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.sleep, 0)  # a runnable task: the loop must not poll
            assert poll.receive(a, buf, spin) == -1
        assert poll.receive(a, buf, spin) == 1
        for s in (a, c):
            poll.remove(s)
        for s in (a, b, c, d):
            s.close()
    trio.run(main)


@pytest.mark.parametrize("poll_us", [0, 1000])
def test_back_to_back_calls_take_the_poll_path_only_when_on(poll_us: int) -> None:
    """A real server and client: with a window, most requests arrive while the connection
    polls (hits); with 0, none do.  Answers are the same either way."""
    async def main(path: str) -> None:
        async with rt.GdevSystem(rt.GdevConfig(memory=64 << 20, ioctl_poll_us=poll_us)) as system:
            sessions = SessionTable(system, path)
            server = IoctlServer(sessions, path)
            async with trio.open_nursery() as nursery:
                await nursery.start(server.serve)
                me = Opener(os.getuid(), os.getgid(), os.getpid(), os.getpid())
                session = await sessions.open(0, me)

                def client() -> list[int]:
                    conn = Connection.connect(path)
                    try:
                        conn.call("HELLO", token=session.token)
                        return [conn.call("GQUERY", type=rt.GDEV_QUERY_DEVICE_MEM_SIZE)
                                .fields.result for _ in range(300)]
                    finally:
                        conn.close()
                results = await trio.to_thread.run_sync(client)
                await sessions.end_all()
                nursery.cancel_scope.cancel()
            assert results == [system.virtual[0].memory_size] * 300
            if poll_us:
                assert server.poll.hits > 0
            else:
                assert server.poll.hits == server.poll.misses == 0
    with tempfile.TemporaryDirectory(prefix="gdevd-poll-") as tmp:
        trio.run(main, os.path.join(tmp, "s"))


@pytest.mark.parametrize("delays", [(0.0, 0.0), (0.0, 0.002), (0.003, 0.0)])
def test_client_reads_a_reply_that_comes_late_or_in_pieces(delays, monkeypatch) -> None:
    """The polling receive must hand partial data to the general path: the first piece
    after ``delays[0]``, the rest after ``delays[1]`` more."""
    monkeypatch.setattr(connection, "SPIN_S", 100e-6)
    a, b = socket.socketpair()
    conn = Connection(a)
    cmd = abi.BY_NAME["GQUERY"]

    def server() -> None:
        for rid in range(1, 6):
            b.recv(4096)
            reply = abi.encode_reply(cmd, rid, 0, result=rid * 7)
            time.sleep(delays[0])
            b.send(reply[:13])
            time.sleep(delays[1])
            b.send(reply[13:])
    t = threading.Thread(target=server)
    t.start()
    try:
        assert [conn.call("GQUERY", type=1).fields.result for _ in range(5)] == \
            [7, 14, 21, 28, 35]
    finally:
        t.join()
        conn.close()
        b.close()
