"""CUDA IPC through the real daemon and the Python client: two clients sharing an allocation
and an event; an unprivileged tenant refused with a forged handle and admitted with the real
one (the handle is the capability, as in CUDA); an exporter killed while its memory is open
elsewhere, the memory living until the importer closes it; the Python CUDA layer's cuIpc*
between two processes (uses tests/daemon's helpers)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import libgdev
from libgdev import cuda, ipchandle

from .test_mounted import helpers, helpers_backend, unprivileged  # noqa: F401

pytestmark = pytest.mark.mount
MiB = 1 << 20


@pytest.fixture(scope="module")
def gdevd():
    d = helpers.start_gdevd()
    try:
        yield d
        assert "Traceback" not in d.log_text(), d.log_text()
    finally:
        helpers.stop_gdevd(d)


def _used(gdevd, vd: int) -> int:
    return int(Path(gdevd.proc_path(f"vd{vd}", "memory_used")).read_text())


def _wait_for(cond, seconds: float = 30) -> None:  # type: ignore[no-untyped-def]
    """Poll ``cond`` until true (the daemon releases a dead process's context after it)."""
    deadline = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < deadline, "condition never held"
        time.sleep(0.05)


def _shm_lines(gdevd) -> int:
    return len(Path(gdevd.proc_path("shm")).read_text().splitlines())


def test_two_clients_share_memory_and_an_event(gdevd) -> None:
    with libgdev.gopen(0, gdevd.mount) as a, libgdev.gopen(1, gdevd.mount) as b:
        base = _used(gdevd, 0)
        va = a.gmalloc(MiB)
        a.gmemcpy_to_device(va, np.arange(MiB // 4, dtype=np.uint32))
        handle = a.gipc_export(va + 100)
        vb, size = b.gipc_open(handle)
        assert size == MiB and _used(gdevd, 1) == 0 and _used(gdevd, 0) == base + MiB
        out = np.zeros(MiB // 4, np.uint32)
        b.gmemcpy_from_device(out, vb)
        assert (out == np.arange(MiB // 4)).all()
        ev = a.gipc_event_new()
        eid = b.gipc_event_open(ev)
        b.gmemcpy_to_device(vb, np.full(16, 7, np.uint32))
        b.gipc_event_record(eid)
        a.gipc_event_sync(ipchandle.unpack(ev, ipchandle.EVENT_MAGIC).id)  # type: ignore[union-attr]
        a.gmemcpy_from_device(out[:16], va)
        assert (out[:16] == 7).all()
        a.gfree(va)                                     # the importer keeps the memory
        with libgdev.gopen(2, gdevd.mount) as c, \
                pytest.raises(FileNotFoundError, match="GIPC_OPEN: no live exported"):
            c.gipc_open(handle)
        b.gmemcpy_from_device(out[:16], vb)
        assert (out[:16] == 7).all() and _used(gdevd, 0) == base + MiB
        b.gipc_close(vb)
        assert _used(gdevd, 0) == base and _shm_lines(gdevd) == 1
        with pytest.raises(OSError, match="GIPC_CLOSE: no opened IPC allocation"):
            b.gipc_close(vb)


TENANT = """
handle = bytes.fromhex({handle!r})
forged = bytearray(handle); forged[30] ^= 0x55
with libgdev.gopen(1) as h:
    try:
        h.gipc_open(bytes(forged))
        raise AssertionError("a forged handle opened")
    except FileNotFoundError as e:
        assert "no live exported allocation" in str(e), e
    va, size = h.gipc_open(handle)              # whoever holds the handle may open it
    out = numpy.zeros(256, numpy.uint32)
    h.gmemcpy_from_device(out, va)
    assert (out == numpy.arange(256)).all(), out[:4]
    h.gipc_close(va)
print("ok")
"""


def test_a_tenant_needs_the_real_handle(gdevd, unprivileged) -> None:  # noqa: F811
    with libgdev.gopen(0, gdevd.mount) as h:
        va = h.gmalloc(MiB)
        h.gmemcpy_to_device(va, np.arange(256, dtype=np.uint32))
        code = TENANT.format(handle=h.gipc_export(va).hex())
        r = helpers.run_as(unprivileged, code, gdevd.env())
        assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
        h.gfree(va)
    assert _shm_lines(gdevd) == 1


EXPORTER = """
import os, signal, libgdev, numpy
h = libgdev.gopen(2)
va = h.gmalloc(2 << 20)
h.gmemcpy_to_device(va, numpy.full(64, 42, numpy.uint32))
print(h.gipc_export(va).hex(), flush=True)
signal.pause()
"""


def test_a_killed_exporters_memory_lives_until_the_importer_closes(gdevd) -> None:
    env = {**gdevd.env(), "PYTHONPATH": str(Path(__file__).parents[2])}
    proc = subprocess.Popen([sys.executable, "-c", EXPORTER], env=env, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None
        handle = bytes.fromhex(proc.stdout.readline().strip())
        with libgdev.gopen(0, gdevd.mount) as h:
            va, _ = h.gipc_open(handle)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            _wait_for(lambda: _shm_lines(gdevd) == 2 and
                             "no live" in _reopen_error(gdevd, handle))
            out = np.zeros(64, np.uint32)
            h.gmemcpy_from_device(out, va)
            assert (out == 42).all() and _used(gdevd, 2) == 2 * MiB
        _wait_for(lambda: _used(gdevd, 2) == 0 and _shm_lines(gdevd) == 1)
    finally:
        proc.kill()
        proc.wait()


def _reopen_error(gdevd, handle: bytes) -> str:
    with libgdev.gopen(3, gdevd.mount) as other:
        try:
            va, _ = other.gipc_open(handle)
        except OSError as e:
            return str(e)
        other.gipc_close(va)
        return "opened"


CUDA_CHILD = """
from libgdev import cuda
handle, event = bytes.fromhex({mem!r}), bytes.fromhex({event!r})
cuda.cuInit(0)
ctx = cuda.cuCtxCreate(0, 1)
p = cuda.cuIpcOpenMemHandle(handle)
assert cuda.cuIpcOpenMemHandle(handle) == p            # reference counted
out = numpy.zeros(64, numpy.uint32)
cuda.cuMemcpyDtoH(out, p)
assert (out == numpy.arange(64)).all(), out[:4]
cuda.cuMemcpyHtoD(p, numpy.full(64, 9, numpy.uint32))
ev = cuda.cuIpcOpenEventHandle(event)
cuda.cuEventRecord(ev, None)
forged = bytearray(handle); forged[30] ^= 1
try:
    cuda.cuIpcOpenMemHandle(bytes(forged))
    raise AssertionError("forged handle opened")
except cuda.CudaError as e:
    assert e.result == cuda.CUresult.CUDA_ERROR_INVALID_HANDLE, e
cuda.cuIpcCloseMemHandle(p)
cuda.cuIpcCloseMemHandle(p)
cuda.cuEventDestroy(ev)
cuda.cuCtxDestroy(ctx)
print("ok")
"""


def test_the_python_cuda_layer_between_two_processes(gdevd) -> None:
    drv = cuda.bind(helpers_backend(gdevd.mount))
    drv.cuInit(0)
    ctx = drv.cuCtxCreate(0, 0)
    try:
        p = drv.cuMemAlloc(4096)
        drv.cuMemcpyHtoD(p, np.arange(1024, dtype=np.uint32))
        handle = drv.cuIpcGetMemHandle(p + 8)
        ev = drv.cuEventCreate(cuda.CU_EVENT_INTERPROCESS | cuda.CU_EVENT_DISABLE_TIMING)
        with pytest.raises(cuda.CudaError, match="CUDA_ERROR_INVALID_CONTEXT"):
            drv.cuIpcOpenMemHandle(handle)                  # its own process
        with pytest.raises(cuda.CudaError, match="CUDA_ERROR_INVALID_VALUE"):
            drv.cuEventCreate(cuda.CU_EVENT_INTERPROCESS)   # timing events cannot be shared
        code = CUDA_CHILD.format(mem=handle.hex(), event=drv.cuIpcGetEventHandle(ev).hex())
        r = helpers.run_as(None, code, gdevd.env())
        assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
        drv.cuEventSynchronize(ev)
        out = np.zeros(64, np.uint32)
        drv.cuMemcpyDtoH(out, p)
        assert (out == 9).all()
        drv.cuEventDestroy(ev)
        drv.cuMemFree(p)
    finally:
        drv.cuCtxDestroy(ctx)
        drv.shutdown()
    assert _shm_lines(gdevd) == 1
