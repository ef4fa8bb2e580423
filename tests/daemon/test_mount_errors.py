"""Errors that explain: the daemon's reason reaches the client's exception across the ABI,
and opening the device without a daemon says how to start one."""

from __future__ import annotations

import errno
import os
import struct
import subprocess
import sys

import pytest

import libgdev
from libgdev.errors import GdevError

pytestmark = pytest.mark.mount


def test_allocation_over_the_share_names_the_share(gdevd) -> None:
    with libgdev.gopen(0, gdevd.mount) as h:
        share = h.gquery(libgdev.GDEV_QUERY_DEVICE_MEM_SIZE)
        with pytest.raises(GdevError) as info:
            h.gmalloc(share + (1 << 20))
    e = info.value
    assert isinstance(e, GdevError) and e.errno == errno.ENOMEM
    assert "GMALLOC" in str(e) and f"vGPU 0's share ({share})" in str(e), str(e)


def test_a_kernel_fault_names_the_kernel_and_the_address(gdevd) -> None:
    from test_mount_launch import PTX

    with libgdev.gopen(0, gdevd.mount) as h:
        code = PTX.read_bytes()
        caddr = h.gmalloc(len(code))
        h.gmemcpy_to_device(caddr, code)
        bad = 0xdead0000
        k = libgdev.GdevKernel(caddr, len(code), "spin", params=struct.pack("<QI4x", bad, 1))
        with pytest.raises(OSError) as info:
            h.gsync(h.glaunch(k))
    assert info.value.errno == errno.EFAULT
    assert "spin" in str(info.value) and f"0x{bad:x}" in str(info.value), str(info.value)


def test_a_bad_module_image_names_the_line(gdevd) -> None:
    with libgdev.gopen(0, gdevd.mount) as h:
        addr = h.gmalloc(64)
        with pytest.raises(OSError) as info:
            h.gsync(h.glaunch(libgdev.GdevKernel(addr, 16, "nope")))
    assert info.value.errno == errno.EINVAL
    assert "GLAUNCH: <ptx>:1: missing .version directive" in str(info.value), str(info.value)


def test_no_daemon_says_how_to_start_one(tmp_path) -> None:
    mount = str(tmp_path / "nothing-here")
    code = "import libgdev\ntry:\n    libgdev.gopen(0)\nexcept FileNotFoundError as e:\n" \
           "    print(e)\n"
    env = {**os.environ, "GDEV_MOUNT": mount}
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert f"no gdevd at {mount} (GDEV_MOUNT={mount}): start it with `gdevd {mount}`" \
        in r.stdout, r.stdout


def test_a_stale_mount_is_named_with_the_command_that_clears_it() -> None:
    import signal

    from conftest import start_gdevd, stop_gdevd

    d = start_gdevd()
    try:
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait()
        with pytest.raises(OSError) as info:
            libgdev.gopen(0, d.mount)
        assert info.value.errno == errno.ENOTCONN
        assert "stale mount" in str(info.value) and f"fusermount3 -u {d.mount}" in \
            str(info.value), str(info.value)
    finally:
        subprocess.run(["fusermount3", "-u", "-z", d.mount], check=False)
        stop_gdevd(d)
