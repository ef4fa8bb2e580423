"""Spin, then block: libgdev.spin's backoff, the daemon's BusyPoll guards, and the client's
polling receive (replies that come late, or in pieces, are still read whole)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

import pytest
import trio

from gdevd import runtime as rt
from gdevd.ioctl.busypoll import BusyPoll
from libgdev import abi, connection
from libgdev.connection import Connection
from libgdev.spin import AdaptiveSpin, spin_window
from tests import jitwarm
from tests.loopback import Loopback, Peer


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


def test_spin_windows_are_zero_on_one_cpu() -> None:
    """A child pinned to one CPU gets 0 for both default windows; with two or more, the
    windows are on (docs/abi.md)."""
    code = ("import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
            "from gdevd.runtime import GdevConfig; from libgdev import connection; "
            "print(GdevConfig().ioctl_poll_us, connection.SPIN_S)")
    env = {k: v for k, v in os.environ.items() if k != "LIBGDEV_SPIN_US"}
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    assert out == ["0", "0.0"]
    assert spin_window(50) == (50 if len(os.sched_getaffinity(0)) > 1 else 0)


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


# Calls back to back, each after a 200 us pause: the server has replied and looked for the
# next request before it comes, so it must wait for it (poll or sleep) every time.  The
# client runs on its own CPU (argv[3]): a reply wakes its reader onto the replier's CPU
# (a sync wake-up), where it would queue behind the poll until the window ends.
CLIENT = """
import os, socket, sys, time
os.sched_setaffinity(0, {int(sys.argv[3])})
from libgdev import abi
from libgdev.connection import Connection
def pause():
    end = time.perf_counter() + 200e-6
    while time.perf_counter() < end:
        pass
    return int(sys.argv[2])
conn = Connection(socket.socket(fileno=int(sys.argv[1])))
conn.call(abi.HELLO, abi.Hello(token=bytes.fromhex(sys.stdin.readline())))
print([conn.call(abi.GQUERY, abi.Query(type=pause())).fields.result for _ in range(300)])
conn.close()
"""


@pytest.mark.parametrize("poll_us", [0, 1000])
def test_back_to_back_calls_take_the_poll_path_only_when_on(poll_us: int,
                                                            loopback: Loopback) -> None:
    """A real server and a client process (a client thread of this process would contend
    for the GIL with the polling loop): with a window, requests arrive while the connection
    polls (hits); with 0, it never polls.  Answers are the same either way."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("needs two CPUs: a polling server and its client on one take turns")
    mine = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpus[0]})  # this thread runs the trio loop, the server
    try:
        _back_to_back(loopback, poll_us, cpus[1])
    finally:
        os.sched_setaffinity(0, mine)


def _quiet() -> None:
    """Wait for this process's background PTX compiles (earlier tests' tiered modules): a
    compiler on the client's CPU delays every request past the window.  (The session's
    JIT warm-up is paused meanwhile: see _back_to_back.)"""
    for t in threading.enumerate():
        if t.name == "gdev-jit-cc":
            t.join(60)


def _back_to_back(loopback: Loopback, poll_us: int, client_cpu: int) -> None:
    _quiet()        # first: they may wait for the warm-up's build of their module
    with jitwarm.paused():
        _back_to_back_quiet(loopback, poll_us, client_cpu)


def _back_to_back_quiet(loopback: Loopback, poll_us: int, client_cpu: int) -> None:
    hits: list[int] = []

    def body(peer: Peer) -> None:
        sock = peer.connect()  # the child inherits it (SO_PEERCRED names this process)
        child = subprocess.Popen(
            [sys.executable, "-c", CLIENT, str(sock.fileno()),
             str(rt.GDEV_QUERY_DEVICE_MEM_SIZE), str(client_cpu)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, pass_fds=[sock.fileno()])
        sock.close()
        out, _ = child.communicate(peer.sessions[0].token.hex() + "\n")
        assert child.returncode == 0
        assert out.strip() == str([peer.system.virtual[0].memory_size] * 300)
        if not poll_us:
            assert peer.server.poll.hits == peer.server.poll.misses == 0
        hits.append(peer.server.poll.hits)
    # a crowded CPU (another process's compiler) can make every poll of one connection miss,
    # and its backoff then polls only ~10 times: up to three connections, a second apart
    for _ in range(3):
        loopback.run(body, ioctl_poll_us=poll_us)
        if not poll_us or hits[-1]:
            break
        time.sleep(1)
    if poll_us:
        assert hits[-1] > 0, hits


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
            reply = abi.encode_reply(cmd, rid, abi.Result(result=rid * 7))
            time.sleep(delays[0])
            b.send(reply[:13])
            time.sleep(delays[1])
            b.send(reply[13:])
    t = threading.Thread(target=server)
    t.start()
    try:
        assert [conn.call(abi.GQUERY, abi.Query(type=1)).fields.result for _ in range(5)] == \
            [7, 14, 21, 28, 35]
    finally:
        t.join()
        conn.close()
        b.close()
