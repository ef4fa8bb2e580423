"""Under the ``jit`` engine policy a launch waits for its kernel's compile.  That wait must
hold only its caller: every other tenant's calls and the file system go on meanwhile (the
compiler here is held at a gate the test opens, so that the wait lasts as long as it must)."""

from __future__ import annotations

import os
import struct
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import libgdev
from tests.daemon.conftest import start_gdevd, stop_gdevd

pytestmark = pytest.mark.mount
MADD = (Path(__file__).resolve().parents[2] / "kernels" / "madd.ptx").read_bytes()


def _gated_compiler(tmp_path: Path) -> tuple[Path, Path]:
    """(a C compiler that runs cc only once ``gate`` exists, gate)."""
    gate = tmp_path / "gate"
    cc = tmp_path / "gated-cc"
    cc.write_text(f'#!/bin/sh\nwhile [ ! -e "{gate}" ]; do sleep 0.05; done\nexec cc "$@"\n')
    cc.chmod(0o755)
    return cc, gate


def _in_thread(fn) -> threading.Thread:
    t = threading.Thread(target=fn, daemon=True)
    t.start()
    return t


def test_a_launch_waiting_for_its_compile_holds_nobody_else(tmp_path) -> None:
    cc, gate = _gated_compiler(tmp_path)
    cache = tmp_path / "jit"
    cache.mkdir(mode=0o700)
    d = start_gdevd(env={**os.environ, "CC": str(cc), "GDEV_JIT_CACHE": str(cache),
                         "GDEV_PTX_ENGINE": "jit"})
    try:
        with libgdev.gopen(0, d.mount) as a, libgdev.gopen(1, d.mount) as b:
            n = 32
            x = np.arange(n * n, dtype=np.uint32)
            bufs = [a.gmalloc(x.nbytes) for _ in range(3)]
            a.gmemcpy_to_device(bufs[0], x)
            a.gmemcpy_to_device(bufs[1], x)
            t = a.gmodule_load(MADD, "madd.ptx")
            params = struct.pack("<QQQI", *bufs, n)
            launched = _in_thread(lambda: a.gsync(a.gmodule_launch(
                t.module_id, 0, (2, 2, 1), (16, 16, 1), 0, params)))
            time.sleep(1)                 # (for the launch to reach the daemon and wait there)
            seen: dict[str, object] = {}

            def others() -> None:
                addr = b.gmalloc(4096)
                b.gfree(addr)
                seen["contexts"] = Path(d.proc_path("contexts")).read_text()

            other = _in_thread(others)
            other.join(30)
            answered, held = not other.is_alive(), launched.is_alive()
            gate.touch()                  # let the compiler run, whatever happened
            other.join(30)
            launched.join(120)
            assert answered, "another tenant's calls waited for this launch's compile"
            assert "contexts" in seen
            assert held, "the launch ran before its kernel was compiled"
            assert not launched.is_alive()
            c = np.empty_like(x)
            a.gmemcpy_from_device(c, bufs[2])
            assert np.array_equal(c, 2 * x)
            # the module's status turns jit once its build has also stored the cache entry,
            # just after the launch got its kernel
            deadline = time.monotonic() + 30
            while " jit " not in (mods := Path(d.proc_path("ptx_modules")).read_text()) \
                    and time.monotonic() < deadline:
                time.sleep(0.05)
            assert " jit " in mods, mods
    finally:
        gate.touch()
        stop_gdevd(d)
