"""glaunch, gsync, gbarrier: the launch plumbing (with tests/runtime/fakemod.py's double)."""

from __future__ import annotations

import errno
import struct
import time

import numpy as np
import pytest
import trio

from gdevd import runtime as rt
from gdevd.errors import KernelFault

from . import fakemod
from .conftest import raises_errno, run_system


async def _upload(h: rt.Handle, text: str) -> tuple[int, int]:
    code = text.encode()
    va = await rt.gmalloc(h, len(code))
    await rt.gmemcpy_to_device(h, va, code, len(code))
    return va, len(code)


def _fill(code: tuple[int, int], addr: int, value: int, count: int) -> rt.GdevKernel:
    return rt.GdevKernel(code[0], code[1], "fill", grid=(1, 1, 1), block=(32, 1, 1),
                         params=struct.pack("<QII", addr, value, count))


def _spin(code: tuple[int, int], slices: int, ms: int) -> rt.GdevKernel:
    return rt.GdevKernel(code[0], code[1], "spin", params=struct.pack("<II", slices, ms))


def _system(calls: list[str]):  # type: ignore[no-untyped-def]
    def wrap(body):  # type: ignore[no-untyped-def]
        async def run(s: rt.GdevSystem) -> None:
            s.module_loader = fakemod.loader(calls)
            await body(s)
        return run
    return wrap


def test_launch_runs_on_the_engine_in_slices_and_modules_are_decoded_once() -> None:
    calls: list[str] = []

    @_system(calls)
    async def body(s: rt.GdevSystem) -> None:
        a, b = await rt.gopen(s, 0), await rt.gopen(s, 1)
        out = []
        for h in (a, b):
            code = await _upload(h, "FAKE one")
            va = await rt.gmalloc(h, 40000)
            fid = await rt.glaunch(h, _fill(code, va, 0xC0FFEE, 10000))
            await rt.gsync(h, fid)
            res = np.zeros(10000, np.uint32)
            await rt.gmemcpy_from_device(h, res, va, 40000)
            out.append(res)
        assert all((r == 0xC0FFEE).all() for r in out)
        assert calls == ["FAKE one"]                       # one decode for both contexts
        assert s.physical[0].modules.hits == 1
        assert s.physical[0].compute.launches == 2
    run_system(body, compute_slice=1000)                   # 10 slices per launch


def test_launches_and_copies_of_a_handle_run_in_order() -> None:
    @_system([])
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        code = await _upload(h, "FAKE order")
        n = 1 << 20
        va = await rt.gmalloc(h, 4 * n)
        pin = await rt.gmalloc_dma(h, 4 * n)
        pin.array.view(np.uint32)[:] = 1
        c1 = await rt.gmemcpy_to_device_async(h, va, pin, 4 * n)      # 1s everywhere
        f1 = await rt.glaunch(h, _fill(code, va, 2, n // 2))           # then 2s in half
        c2 = await rt.gmemcpy_from_device_async(h, pin, va, 4 * n)     # then read back
        assert (c1, f1, c2) == (c1, c1 + 1, c1 + 2)
        await rt.gbarrier(h)
        res = pin.array.view(np.uint32)
        assert (res[: n // 2] == 2).all() and (res[n // 2:] == 1).all()
    run_system(body)


def test_kernel_fault_is_sticky_for_its_context_only() -> None:
    @_system([])
    async def body(s: rt.GdevSystem) -> None:
        bad, good = await rt.gopen(s, 0), await rt.gopen(s, 0)
        cb, cg = await _upload(bad, "FAKE f"), await _upload(good, "FAKE f")
        vg = await rt.gmalloc(good, 4096)
        fid = await rt.glaunch(bad, _fill(cb, 0x7000000000, 1, 10))  # unmapped in `bad`
        fg = await rt.glaunch(good, _fill(cg, vg, 5, 1024))
        with pytest.raises(KernelFault) as info:
            await rt.gsync(bad, fid)
        assert info.value.errno == errno.EFAULT
        for again in (rt.gsync(bad, fid), rt.gbarrier(bad), rt.glaunch(bad, _fill(cb, 0, 0, 1))):
            with raises_errno(errno.EFAULT):
                await again
        await rt.gsync(good, fg)                            # the other context is fine
        out = np.zeros(1024, np.uint32)
        await rt.gmemcpy_from_device(good, out, vg, 4096)
        assert (out == 5).all()
        # a synchronous copy of the faulted context fails the same way, as every CUDA call
        # after a kernel's illegal access does (it would return what the kernel left)
        for copy in (rt.gmemcpy_from_device(bad, bytearray(4), cb[0], 4),
                     rt.gmemcpy_to_device(bad, cb[0], bytes(4), 4),
                     rt.gmemcpy(bad, cb[0], cb[0], 4)):
            with raises_errno(errno.EFAULT):
                await copy
    run_system(body)


def test_gsync_timeout_then_completion() -> None:
    @_system([])
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        code = await _upload(h, "FAKE t")
        fid = await rt.glaunch(h, _spin(code, 10, 20))                  # ~200 ms
        with raises_errno(errno.ETIME):
            await rt.gsync(h, fid, timeout=0.01)
        with raises_errno(errno.ETIME):
            await rt.gbarrier(h, timeout=0.0)
        await rt.gsync(h, fid, timeout=10)
        await rt.gsync(h, fid)                                           # no longer pending
    run_system(body)


def test_gsync_bad_ids() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        for bad in (-1, 4096, 1.0, "1", None):
            with raises_errno(errno.EINVAL):
                await rt.gsync(h, bad)  # type: ignore[arg-type]
        for bad_timeout in (-1, float("nan"), "1"):
            with raises_errno(errno.EINVAL):
                await rt.gsync(h, 0, timeout=bad_timeout)  # type: ignore[arg-type]
            with raises_errno(errno.EINVAL):
                await rt.gbarrier(h, timeout=bad_timeout)  # type: ignore[arg-type]
        await rt.gsync(h, 0)                                    # id 0 returns at once
        await rt.gsync(h, 17)                                   # never issued: nothing to wait
    run_system(body)


def test_gclose_cancels_a_running_launch_and_the_engine_goes_on() -> None:
    @_system([])
    async def body(s: rt.GdevSystem) -> None:
        a, b = await rt.gopen(s, 0), await rt.gopen(s, 1)
        ca, cb = await _upload(a, "FAKE c"), await _upload(b, "FAKE c")
        await rt.glaunch(a, _spin(ca, 100000, 5))                         # ~8 minutes
        queued = await rt.glaunch(a, _spin(ca, 100000, 5))
        assert queued in a.pending
        await trio.sleep(0.02)
        t0 = time.monotonic()
        await rt.gclose(a)
        assert time.monotonic() - t0 < 2
        vb = await rt.gmalloc(b, 4096)
        await rt.gsync(b, await rt.glaunch(b, _fill(cb, vb, 7, 16)), timeout=5)
    run_system(body)


def test_glaunch_errors() -> None:
    @_system([])
    async def body(s: rt.GdevSystem) -> None:
        h, other = await rt.gopen(s, 0), await rt.gopen(s, 0)
        code = await _upload(h, "FAKE e")
        va = await rt.gmalloc(h, 4096)
        bad_descriptors = [
            rt.GdevKernel(code[0], code[1], "fill", grid=(0, 1, 1)),
            rt.GdevKernel(code[0], code[1], "fill", block=(1, 1)),   # type: ignore[arg-type]
            rt.GdevKernel(code[0], code[1], "fill", block=(1, -1, 1)),
            rt.GdevKernel(code[0], code[1], ""),
            rt.GdevKernel(code[0], code[1], "fill", params="x"),     # type: ignore[arg-type]
            rt.GdevKernel(code[0], 0, "fill"),
            rt.GdevKernel(code[0], code[1], "fill", shared_dynamic=-1),
            rt.GdevKernel(code[0], code[1], "nosuchentry"),          # the module refuses
            "not a kernel",
        ]
        for k in bad_descriptors:
            with raises_errno(errno.EINVAL):
                await rt.glaunch(h, k)  # type: ignore[arg-type]
        with raises_errno(errno.ENOENT):
            await rt.glaunch(other, _fill(code, va, 1, 1))          # code not in `other`
        with raises_errno(errno.EFAULT):
            await rt.glaunch(h, rt.GdevKernel(code[0], 8192, "fill"))
        garbage = await _upload(h, "not a module")
        with raises_errno(errno.EINVAL):
            await rt.glaunch(h, _fill(garbage, va, 1, 1))
        binary = await rt.gmalloc(h, 4)
        await rt.gmemcpy_to_device(h, binary, b"\xff\xfe\x00\x01", 4)
        with raises_errno(errno.EINVAL):
            await rt.glaunch(h, _fill((binary, 4), va, 1, 1))
        assert not h.pending and h.fault is None
    run_system(body)
