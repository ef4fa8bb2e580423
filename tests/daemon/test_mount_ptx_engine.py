"""The PTX engine through the daemon: /proc/gdev/ptx_engine selects it, /proc/gdev/ptx_modules
shows each decoded module's engine, and a module compiled in the background keeps giving
the interpreter's results."""

from __future__ import annotations

import errno
import os
import time

import numpy as np
import pytest
from test_mount_launch import launch_spin, spin_model

import libgdev
from tests.daemon.conftest import read_text as _read
from tests.daemon.conftest import write_once as _write

pytestmark = pytest.mark.mount


def _refused(path: str, *values: bytes, err: int = errno.EINVAL) -> None:
    """Each write of one of ``values`` to ``path`` fails with ``err``."""
    for bad in values:
        with pytest.raises(OSError) as info:
            _write(path, bad)
        assert info.value.errno == err


def test_engine_policy_through_proc(gdevd) -> None:
    path = gdevd.proc_path("ptx_engine")
    assert _read(path) == "auto\n"
    _refused(path, b"fast\n", b"\n", b"jit interp")
    _write(path, b"interp")
    assert _read(path) == "interp\n"
    _write(path, b"auto\n")
    assert _read(path) == "auto\n"


def test_compile_nice_through_proc(gdevd) -> None:
    path = gdevd.proc_path("ptx_compile_nice")
    assert _read(path) == "10\n"
    _refused(path, b"20\n", b"-1\n", b"low\n")
    _write(path, b"19\n")
    assert _read(path) == "19\n"
    _write(path, b"10\n")


def test_compute_nice_through_proc(gdevd) -> None:
    path = gdevd.proc_path("compute_nice")
    assert _read(path) == "5\n"
    _refused(path, b"20\n", b"-1\n", b"low\n")
    _write(path, b"12\n")
    assert _read(path) == "12\n"
    if os.geteuid() == 0:      # a less nice value again: only a privileged daemon may
        _write(path, b"5\n")
        assert _read(path) == "5\n"
    else:
        _refused(path, b"5\n", err=errno.EPERM)


def test_module_compiles_in_the_background_and_results_stay_exact(gdevd) -> None:
    header = _read(gdevd.proc_path("ptx_modules")).splitlines()[0]
    assert header.split() == ["gpu", "module", "status", "compile_s", "kernels_compiled",
                              "kernels"]
    with libgdev.gopen(0, gdevd.mount) as h:
        fence, out, n = launch_spin(h, 200)          # served at once, by the interpreter
        h.gsync(fence, timeout=60)
        rows = _read(gdevd.proc_path("ptx_modules")).splitlines()[1:]
        assert len(rows) == 1 and rows[0].split()[2] in ("compiling", "jit")
        deadline = time.monotonic() + 120
        while rows[0].split()[2] == "compiling" and time.monotonic() < deadline:
            time.sleep(0.2)
            rows = _read(gdevd.proc_path("ptx_modules")).splitlines()[1:]
        gpu, _, status, seconds, compiled, kernels = rows[0].split()
        assert (status, compiled, kernels) == ("jit", "1", "1") and float(seconds) > 0
        for _ in range(2):                           # now on the compiled engine
            fence, out, n = launch_spin(h, 300)
            h.gsync(fence, timeout=60)
            got = np.empty(n, np.uint32)
            h.gmemcpy_from_device(got, out)
            assert np.array_equal(got, spin_model(n, 300))
