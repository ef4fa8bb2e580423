"""A bounded hostile campaign against a real daemon: fuzzed frames, truncation, floods and
exhaustion, each phase followed by the same checks.

After every phase the daemon is alive, the bystander tenant (another vGPU, its own bytes)
reads back exactly what it wrote, and the daemon's RSS is back within 10 % of the baseline
taken after a warm-up round of the same attacks.  Every refused exhaustion request is checked
to change nothing (``/proc`` counters before and after).  The counts are printed (``-s``).
Bounded: a fixed seed and fixed numbers of messages, well under a minute on two cores.
"""

from __future__ import annotations

import errno
import os
import random
import socket
import struct
from collections import Counter

import numpy as np
import pytest

import libgdev
from libgdev import abi
from tests.daemon.conftest import stop_gdevd
from tests.hostile.tenants import Bystander, RawSession, rss_kib, settled_rss, start_with
from tests.memory.kernels import PTX

pytestmark = pytest.mark.mount
MiB = 1 << 20
NUMBERS = [c.number for c in abi.COMMANDS]
FUZZ_SESSIONS, FUZZ_FRAMES = 20, 100


@pytest.fixture(scope="module")
def daemon():
    d = start_with(memory="256M", host_swap=64 * MiB, preauth_timeout_s=1.0,
                   launches_queued_max=8)
    try:
        yield d
    finally:
        stop_gdevd(d)


def _frame(rng: random.Random) -> bytes:
    """One hostile frame: a real command with random fields, an unknown command, or a wrong
    ABI version (framing intact, so each gets an answer)."""
    kind = rng.randrange(4)
    number = rng.choice(NUMBERS) if kind < 3 else rng.randrange(1 << 16)
    payload = rng.randbytes(rng.choice((0, 8, 16, 24, 40, 48, 56, rng.randrange(200))))
    head = abi.HEADER.pack(abi.MAGIC, abi.ABI_VERSION if kind != 2 else rng.randrange(9),
                           0, number, len(payload), rng.randrange(1 << 32), 0)
    return head + payload


def _fuzz(mount: str, rng: random.Random, sessions: int, frames: int, out: Counter) -> None:
    """``sessions`` sessions of ``frames`` fuzzed frames each; every other one ends with
    garbage that loses framing (the daemon must close that session only)."""
    for i in range(sessions):
        raw = RawSession(mount, minor=0)
        try:
            raw.sock.sendall(b"".join(_frame(rng) for _ in range(frames)))
            if i % 2:
                raw.sock.sendall(rng.randbytes(rng.randrange(32, 96)))
            raw.sock.shutdown(socket.SHUT_WR)
            while data := raw.sock.recv(1 << 16):
                raw.rx.feed(data)
        except OSError:
            out["session reset by the daemon"] += 1
        finally:
            while (frame := raw.rx.next_frame()) is not None:
                out[errno.errorcode.get(abi.decode_reply(frame)[1], "OK")] += 1
            raw.close()


def _truncate(mount: str, out: Counter) -> None:
    """Every command's request cut at every eighth byte, then the connection closed."""
    for cmd in abi.COMMANDS:
        whole = abi.HEADER.pack(abi.MAGIC, abi.ABI_VERSION, 0, cmd.number,
                                cmd.request.struct.size, 1, 0) + bytes(cmd.request.struct.size)
        for cut in range(0, len(whole), 8):
            raw = RawSession(mount, minor=0)
            try:
                raw.sock.sendall(whole[:cut])
                out["truncated"] += 1
            except OSError:
                out["session reset by the daemon"] += 1
            finally:
                raw.close()


def _flood(mount: str, out: Counter) -> None:
    """Sessions opened and dropped mid-use, and connections that never say HELLO."""
    for i in range(40):
        h = libgdev.gopen(0, mount)
        h.gmalloc(MiB)
        if i % 2:
            h.gmalloc_dma(MiB)
        h.gclose()
        out["sessions"] += 1
    fd, ticket = libgdev.gate.open_gate(0, mount)
    os.close(fd)
    socks = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(40)]
    refused = set()
    for s in socks:
        s.connect(ticket.socket)
        try:
            s.sendall(abi.encode_header(0x01, 1, abi.MAX_PAYLOAD)[:20])
        except OSError:     # over the pre-authentication limit: closed as it was accepted
            refused.add(s)
    for s in socks:
        s.settimeout(10)
        try:
            out["preauth refused" if s in refused or s.recv(1) == b"" else
                "preauth answered"] += 1
        except OSError:
            out["preauth refused"] += 1
        s.close()


def _proc(d, name: str, vd: int = 0) -> int:  # type: ignore[no-untyped-def]
    with open(d.proc_path(f"vd{vd}", name)) as f:
        return int(f.read())


def _exhaust(d, out: Counter) -> None:  # type: ignore[no-untyped-def]
    """Take device memory, pinned memory, shm slots and the launch queue to their limits,
    each in a context of its own; each refusal changes nothing."""
    for what, minor, size, code in (("gmalloc", 0, 8 * MiB, errno.ENOMEM),
                                    ("gmalloc_dma", 0, 8 * MiB, errno.ENOMEM),
                                    ("gshmget", 3, 4096, errno.ENOSPC)):
        with libgdev.gopen(minor, d.mount) as h:
            call = {"gmalloc": lambda h=h, n=size: h.gmalloc(n),
                    "gmalloc_dma": lambda h=h, n=size: h.gmalloc_dma(n),
                    "gshmget": lambda h=h, n=size: h.gshmget(0, n, 0o600)}[what]
            for n in range(1000):
                before = (_proc(d, "memory_used", minor), _proc(d, "swapped_bytes", minor))
                try:
                    call()
                except OSError as exc:
                    assert exc.errno == code, (what, exc)
                    after = (_proc(d, "memory_used", minor), _proc(d, "swapped_bytes", minor))
                    assert after == before, what
                    out[f"{what} refused after"] += n
                    break
    with libgdev.gopen(2, d.mount) as h:
        code = h.gmalloc(len(PTX))
        h.gmemcpy_to_device(code, np.frombuffer(PTX, np.uint8))
        n = 64
        a, b, c = (h.gmalloc(4 * n * n) for _ in range(3))
        k = libgdev.GdevKernel(code, len(PTX), "add", grid=(n // 16, n // 16, 1),
                               block=(16, 16, 1), params=struct.pack("<QQQI4x", a, b, c, n))
        for _ in range(200):
            h.glaunch(k)
        h.gbarrier()
        out["launches queued"] += 200


def _after(d, bystander: Bystander, base: int, phase: str,  # type: ignore[no-untyped-def]
           report: dict) -> None:
    assert d.proc.poll() is None, f"daemon died in {phase}"
    bystander.check()
    rss = settled_rss(d.proc.pid, base)
    report[phase] = rss
    assert rss <= base * 1.1, f"{phase}: RSS {rss} KiB vs baseline {base} KiB"


def test_hostile_campaign(daemon) -> None:
    rng = random.Random(1612)
    bystander = Bystander(daemon.mount)
    warm: Counter = Counter()   # one small round of everything, so caches are warm
    _fuzz(daemon.mount, rng, 2, 50, warm)
    _flood(daemon.mount, warm)
    _exhaust(daemon, warm)
    base = settled_rss(daemon.proc.pid, rss_kib(daemon.proc.pid), rounds=0)
    counts: Counter = Counter()
    rss: dict[str, int] = {}
    _fuzz(daemon.mount, rng, FUZZ_SESSIONS, FUZZ_FRAMES, counts)
    _after(daemon, bystander, base, "fuzz", rss)
    _truncate(daemon.mount, counts)
    _after(daemon, bystander, base, "truncation", rss)
    _flood(daemon.mount, counts)
    _after(daemon, bystander, base, "flood", rss)
    _exhaust(daemon, counts)
    _after(daemon, bystander, base, "exhaustion", rss)
    bystander.close()
    print(f"\nhostile campaign: {sum(counts.values())} outcomes {dict(sorted(counts.items()))}")
    print(f"daemon RSS KiB: baseline {base}, after each phase {rss}")
    answered = counts["OK"] + sum(v for k, v in counts.items() if k.startswith("E"))
    assert answered == FUZZ_SESSIONS * FUZZ_FRAMES  # every frame with intact framing answered
    assert counts["session reset by the daemon"] == 0
