"""Device printf through the CUDA driver on every binding (kcuda, libgdev over a mounted gdevd,
gdevd.gdev in-process): a kernel's lines reach this process's stdout at the next
synchronization (cuCtxSynchronize, cuStreamSynchronize, cuEventSynchronize, a blocking copy,
the context's end), in their place after what was printed before; kernels that do not print
cost no round trip; one context never sees another's output."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from .conftest import BINDINGS

PTX = Path(__file__).resolve().parents[1] / "ptx" / "data" / "printf.ptx"


@pytest.fixture(params=BINDINGS)
def any_driver(request):
    return request.getfixturevalue(request.param)


def _lines(b: int) -> str:
    return "".join(f"block {k} lane {t}: {(4 * k + t) ** 2}\n" for k in range(b) for t in (1, 3))


def _launch(drv, ctx, blocks: int, stream=None) -> int:
    f = drv.cuModuleGetFunction(drv.cuModuleLoad(str(PTX)), "odd_lanes")
    out = drv.cuMemAlloc(4 * 4 * blocks)
    drv.cuLaunchKernel(f, blocks, 1, 1, 4, 1, 1, 0, stream, [out])
    return out


@pytest.mark.parametrize("sync", ["ctx", "stream", "event", "copy"])
def test_output_comes_at_each_kind_of_synchronization(any_driver, capfd, sync) -> None:
    drv = any_driver
    ctx = drv.cuCtxCreate(0, 0)
    try:
        stream = drv.cuStreamCreate(0) if sync == "stream" else None
        print("host first", flush=True)
        out = _launch(drv, ctx, 2, stream)
        if sync == "ctx":
            drv.cuCtxSynchronize()
        elif sync == "stream":
            drv.cuStreamSynchronize(stream)
        elif sync == "event":
            ev = drv.cuEventCreate(0)
            drv.cuEventRecord(ev, None)
            drv.cuEventSynchronize(ev)
        else:
            got = np.zeros(8, np.int32)
            drv.cuMemcpyDtoH(got, out, got.nbytes)
            assert got.tolist() == [-7, 3, -7, 3, -7, 3, -7, 3]
        assert capfd.readouterr().out == "host first\n" + _lines(2)
    finally:
        drv.cuCtxDestroy(ctx)


def test_the_contexts_end_prints_what_is_left_and_contexts_are_apart(any_driver, capfd):
    drv = any_driver
    a = drv.cuCtxCreate(0, 0)
    b = drv.cuCtxCreate(0, 0)            # current now: b
    drv.cuCtxPushCurrent(a)
    _launch(drv, a, 1)
    drv.cuCtxPopCurrent()
    drv.cuCtxSynchronize()               # b's synchronization: nothing of a's
    assert capfd.readouterr().out == ""
    drv.cuCtxDestroy(b)
    drv.cuCtxDestroy(a)                  # a's end: its kernel's lines
    assert capfd.readouterr().out == _lines(1)
