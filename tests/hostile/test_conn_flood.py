"""D5: what connections that never authenticate may cost the daemon.

An unprivileged user floods the ioctl socket with connections that send part of a frame
announcing a 1 MiB payload and then wait.  The daemon keeps at most ``preauth_per_uid`` of
them (the rest are closed at once), closes those after ``preauth_timeout_s``, never buffers
more than a few KiB for any of them, and afterwards its RSS is back near its baseline.  Other
users open sessions throughout, and ``accept`` running out of descriptors backs off instead
of ending the daemon.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys

import pytest

import libgdev
from tests.daemon.conftest import run_as, stop_gdevd, unprivileged  # noqa: F401
from tests.hostile.tenants import Bystander, rss_kib, settled_rss, start_with

pytestmark = pytest.mark.mount
PER_UID = 8
FLOOD = 100

# The flooder: connect FLOOD times, send a partial frame on each, then see which the daemon
# closed at once (refused) and which it closed after the pre-HELLO timeout.
FLOODER = f"""
head = libgdev.abi.encode_header(0x01, 1, 1 << 20) + bytes(100)
socks = []
for _ in range({FLOOD}):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.settimeout(10)
    s.connect(sys.argv[1])
    try:
        s.sendall(head)
    except OSError:
        pass
    socks.append(s)
def closed(s):
    if not select.select([s], [], [], 0)[0]:
        return False
    try:
        return s.recv(1) == b""
    except OSError:
        return True
time.sleep(0.5)
refused = sum(map(closed, socks))
time.sleep(3.0)
left = sum(1 for s in socks if not closed(s))
print(json.dumps({{"refused": refused, "held": {FLOOD} - refused, "left": left}}))
"""


@pytest.fixture(scope="module")
def daemon():
    d = start_with(memory="256M", preauth_per_uid=PER_UID, preauth_max=4 * PER_UID,
                   preauth_timeout_s=1.0)
    try:
        yield d
    finally:
        stop_gdevd(d)


def test_preauth_flood_is_bounded_and_given_back(daemon, unprivileged) -> None:  # noqa: F811
    bystander = Bystander(daemon.mount)
    base = rss_kib(daemon.proc.pid)
    code = FLOODER.replace("sys.argv[1]", repr(_socket_path(daemon)))
    r = run_as(unprivileged, code, daemon.env(), preload="import json, select, socket\n")
    counts = json.loads(r.stdout or "null") or pytest.fail(r.stderr)
    print("preauth flood:", counts)
    assert counts["held"] <= PER_UID and counts["refused"] >= FLOOD - PER_UID
    assert counts["left"] == 0  # the held ones were closed at the timeout
    with open(daemon.proc_path("limits")) as f:
        shown = dict(line.split() for line in f if line.startswith("preauth_"))
    assert int(shown["preauth_refused"]) >= counts["refused"] and shown["preauth_now"] == "0"
    assert daemon.proc.poll() is None
    bystander.check()
    with libgdev.gopen(0, daemon.mount) as h:  # a new session of another user still opens
        assert h.gquery(libgdev.GDEV_QUERY_DEVICE_MEM_SIZE) > 0
    bystander.close()
    rss = settled_rss(daemon.proc.pid, base)
    print(f"daemon RSS: baseline {base} KiB, after the flood {rss} KiB")
    assert rss <= base * 1.1


def test_other_users_connect_during_a_flood(daemon, unprivileged) -> None:  # noqa: F811
    """While one user holds its whole pre-HELLO quota, another user's sessions open."""
    path = _socket_path(daemon)
    code = f"""
socks = []
for _ in range({PER_UID}):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect({path!r}); socks.append(s)
print("holding", flush=True)
sys.stdin.read()
"""
    prologue = (f"import os, socket, sys; os.setgroups([]); os.setgid({unprivileged[1]}); "
                f"os.setuid({unprivileged[0]})\n")
    p = subprocess.Popen([sys.executable, "-c", prologue + code], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "holding"
        for _ in range(4):
            with libgdev.gopen(1, daemon.mount) as h:
                h.gfree(h.gmalloc(4096))
    finally:
        p.stdin.close()
        p.wait(10)


def test_accept_out_of_descriptors_backs_off(daemon) -> None:
    """EMFILE in accept: connections wait instead of the daemon ending."""
    pid = daemon.proc.pid
    bystander = Bystander(daemon.mount)
    soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
    used = len(os.listdir(f"/proc/{pid}/fd"))
    socks = []
    try:
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (used + 2, hard))
        for _ in range(12):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(_socket_path(daemon))
            socks.append(s)
    finally:
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard))
    for s in socks:
        s.close()
    assert daemon.proc.poll() is None
    bystander.check()
    bystander.close()
    assert "accept failed" in daemon.log_text()


def _socket_path(daemon) -> str:
    fd, ticket = libgdev.gate.open_gate(0, daemon.mount)
    os.close(fd)
    return ticket.socket
