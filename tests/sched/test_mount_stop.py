"""Launches always stop, through a mounted daemon (issue #16, D3): a client killed in the
middle of a launch of tiny waves frees everything, and SIGTERM ends a daemon whose engine
runs such a launch."""

from __future__ import annotations

import errno
import os
import signal
import struct
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
            caddr, out = _upload_loop(h)
            h.gsync(h.glaunch(_idle(caddr, out, 77)), timeout=30)
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


def _upload_loop(h: libgdev.Handle) -> tuple[int, int]:
    caddr = h.gmalloc(len(LOOP_PTX))
    h.gmemcpy_to_device(caddr, LOOP_PTX)
    return caddr, h.gmalloc(4096)


def _idle(caddr: int, out: int, n: int) -> libgdev.GdevKernel:
    return libgdev.GdevKernel(caddr, len(LOOP_PTX), "idle", params=struct.pack("<QI", out, n))


@pytest.mark.timeout(180)
def test_a_vgpu_watchdog_set_in_proc_kills_with_etime_and_counts() -> None:
    d = start_gdevd()
    try:
        assert _read(d, "vd0", "watchdog_ms") == "0"             # off by default
        assert int(_read(d, "kernel_time_max_ms")) > 0            # the tenants' limit is on
        assert 0 < int(_read(d, "slice_us")) <= 10_000             # preemptive by default
        with open(d.proc_path("vd0", "watchdog_ms"), "w") as f:
            f.write("300")
        with libgdev.gopen(0, d.mount) as h, libgdev.gopen(1, d.mount) as other:
            fence = h.glaunch(_idle(*_upload_loop(h), 2**32 - 1))
            caddr, out = _upload_loop(other)                      # the other vGPU is served
            other.gsync(other.glaunch(_idle(caddr, out, 33)), timeout=30)
            got = bytearray(4)
            other.gmemcpy_from_device(got, out)
            assert struct.unpack("<I", got)[0] == 33
            with pytest.raises(OSError) as info:
                h.gsync(fence)
            assert info.value.errno == errno.ETIME
        assert _read(d, "vd0", "timeouts") == "1" and _read(d, "vd1", "timeouts") == "0"
    finally:
        assert stop_gdevd(d) == 0


@pytest.mark.timeout(240)
def test_ecryptfs_works_beside_a_looping_kernel_with_preemption_off(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """#16 D4: the paper's non-preemptive mode, a tenant's endless kernel on the module's
    vGPU; the in-daemon ecryptfs still encrypts on the GPU (its context preempts tenants)."""
    lower = tmp_path / "lower"
    lower.mkdir()
    os.chmod(tmp_path, 0o755)
    spec = f"ecryptfs:lower={lower},passphrase=x,scrypt_log2n=4,threshold=0"
    d = start_gdevd("--module", spec)
    client = None
    try:
        view = os.path.join(d.mount, "ecryptfs")
        deadline = time.monotonic() + 30
        while not os.path.isdir(view) and time.monotonic() < deadline:
            time.sleep(0.02)
        for entry in ("slice_us", "kernel_time_max_ms"):   # no preemption, no time limit
            with open(d.proc_path(entry), "w") as f:
                f.write("0")
        client = _start_client(d, 0)                      # hours of tiny waves on vd0
        data = os.urandom(40000)
        with open(os.path.join(view, "f"), "wb") as f:
            f.write(data)
        with open(os.path.join(view, "f"), "rb") as f:
            assert f.read() == data
        assert _read(d, "ecryptfs", "last_path") == "gpu"
        assert client.poll() is None                       # the tenant's launch goes on
    finally:
        if client is not None:
            client.kill()
            client.wait()
        assert stop_gdevd(d) == 0
