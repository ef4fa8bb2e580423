"""Launches always stop, through a mounted daemon (issue #16, D3): a client killed in the
middle of a launch of tiny waves frees everything, and SIGTERM ends a daemon whose engine
runs such a launch."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

import libgdev

from ..daemon.conftest import start_gdevd, stop_gdevd
from .kernels import LOOP_PTX

pytestmark = pytest.mark.mount

# A client that launches `loop` with size 0 on the largest legal grid (hours of tiny waves).
HUGE_CLIENT = f"""
import struct, sys, libgdev
code = {LOOP_PTX!r}
h = libgdev.gopen(int(sys.argv[1]))
caddr = h.gmalloc(len(code))
h.gmemcpy_to_device(caddr, code)
out = h.gmalloc(4096)
k = libgdev.GdevKernel(caddr, len(code), "loop", grid=(2**31 - 1, 1, 1), block=(1024, 1, 1),
                       params=struct.pack("<QII", out, 0, 1))
fence = h.glaunch(k)
print("launched", flush=True)
h.gsync(fence)
print("finished?!", flush=True)
"""


def _start_client(d, minor: int) -> subprocess.Popen:  # type: ignore[no-untyped-def]
    c = subprocess.Popen([sys.executable, "-c", HUGE_CLIENT, str(minor)], env=d.env(),
                         stdout=subprocess.PIPE, text=True)
    assert c.stdout is not None and c.stdout.readline().strip() == "launched"
    return c


def _read(d, *parts: str) -> str:  # type: ignore[no-untyped-def]
    with open(d.proc_path(*parts)) as f:
        return f.read().strip()


@pytest.mark.timeout(180)
def test_killing_the_client_of_a_huge_grid_frees_everything() -> None:
    d = start_gdevd()
    try:
        victim = _start_client(d, 0)
        time.sleep(0.3)                                   # the engine is deep in the grid
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(10)
        deadline = time.monotonic() + 30
        while _read(d, "vd0", "memory_used") != "0" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _read(d, "vd0", "memory_used") == "0"
        with libgdev.gopen(1, d.mount) as h:              # another vGPU launches as usual
            code = LOOP_PTX
            caddr = h.gmalloc(len(code))
            h.gmemcpy_to_device(caddr, code)
            out = h.gmalloc(4096)
            k = libgdev.GdevKernel(caddr, len(code), "idle", params=(out).to_bytes(8, "little")
                                   + (77).to_bytes(4, "little"))
            h.gsync(h.glaunch(k), timeout=30)
            got = bytearray(4)
            h.gmemcpy_from_device(got, out)
            assert int.from_bytes(got, "little") == 77
    finally:
        assert stop_gdevd(d) == 0


@pytest.mark.timeout(180)
def test_sigterm_ends_a_daemon_in_the_middle_of_a_huge_grid() -> None:
    d = start_gdevd()
    client = None
    try:
        client = _start_client(d, 0)
        time.sleep(0.3)
        d.proc.send_signal(signal.SIGTERM)
        assert d.proc.wait(15) == 0                       # it hung here before the fix
        assert client.wait(15) != 0 or "finished?!" not in (client.stdout.read() or "")
    finally:
        if client is not None:
            client.kill()
            client.wait()
        stop_gdevd(d)
