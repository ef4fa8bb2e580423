"""Kernel launches through the daemon (tests/daemon/data/spin.ptx), and SIGKILL of a client in
the middle of a long launch: its memory comes back and other clients keep launching."""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import libgdev

pytestmark = pytest.mark.mount
PTX = Path(__file__).parent / "data" / "spin.ptx"


def spin_model(n: int, iters: int) -> np.ndarray:
    """What spin leaves in out[0..n): ``iters`` LCG steps from each thread's index."""
    x = np.arange(n, dtype=np.uint64)
    for _ in range(iters):
        x = (x * 1664525 + 1013904223) & 0xFFFFFFFF
    return x.astype(np.uint32)


def launch_spin(h: libgdev.Handle, iters: int, blocks: int = 2, threads: int = 32) -> tuple:
    """Upload spin.ptx, launch it; (fence id, output address, thread count)."""
    code = PTX.read_bytes()
    caddr = h.gmalloc(len(code))
    h.gmemcpy_to_device(caddr, code)
    n = blocks * threads
    out = h.gmalloc(4 * n)
    k = libgdev.GdevKernel(caddr, len(code), "spin", grid=(blocks, 1, 1),
                           block=(threads, 1, 1), params=struct.pack("<QI4x", out, iters))
    return h.glaunch(k), out, n


def test_launch_and_sync_through_the_daemon(gdevd) -> None:
    with libgdev.gopen(0, gdevd.mount) as h:
        fence, out, n = launch_spin(h, 300)
        h.gsync(fence, timeout=60)
        got = np.empty(n, np.uint32)
        h.gmemcpy_from_device(got, out)
        assert np.array_equal(got, spin_model(n, 300))
        with pytest.raises(OSError) as info:  # a bad entry name is refused by the runtime
            h.glaunch(libgdev.GdevKernel(out, 16, "nope"))
        assert info.value.errno > 0


VICTIM = f"""
import sys, libgdev
h = libgdev.gopen(1)
sys.path.insert(0, {str(Path(__file__).parent)!r})
from test_mount_launch import launch_spin
fence, out, n = launch_spin(h, 50_000_000, blocks=4)
print("launched", flush=True)
h.gsync(fence)
print("finished?!", flush=True)
"""


def test_sigkill_during_a_launch_frees_memory_and_spares_others(gdevd) -> None:
    victim = subprocess.Popen([sys.executable, "-c", VICTIM], env=gdevd.env(),
                              stdout=subprocess.PIPE, text=True)
    try:
        assert victim.stdout.readline().strip() == "launched"
        with libgdev.gopen(1, gdevd.mount) as other:  # same vGPU: does not queue behind gsync
            a = other.gmalloc(1 << 20)
            other.gmemcpy_to_device(a, b"z" * (1 << 20))
            out = bytearray(1 << 20)
            other.gmemcpy_from_device(out, a)
            assert out == b"z" * (1 << 20) and other.gquery(libgdev.GDEV_QUERY_DEVICE_MEM_SIZE)
        assert victim.poll() is None  # still in its gsync
        os.kill(victim.pid, signal.SIGKILL)
        assert victim.wait(10) == -signal.SIGKILL
        deadline = time.monotonic() + 30
        while True:
            with open(gdevd.proc_path("vd1", "memory_used")) as f:
                if int(f.read()) == 0 or time.monotonic() > deadline:
                    break
            time.sleep(0.05)
        with open(gdevd.proc_path("vd1", "memory_used")) as f:
            assert int(f.read()) == 0
        with libgdev.gopen(1, gdevd.mount) as h:  # the GPU is free for the next client
            fence, out, n = launch_spin(h, 100)
            h.gsync(fence, timeout=30)
            got = np.empty(n, np.uint32)
            h.gmemcpy_from_device(got, out)
            assert np.array_equal(got, spin_model(n, 100))
    finally:
        victim.kill()
        victim.wait()
