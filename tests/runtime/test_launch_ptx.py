"""Launches of real nvcc-generated PTX (tests/runtime/data/vadd.cu) through glaunch."""

from __future__ import annotations

import errno
import struct
from pathlib import Path

import numpy as np
import pytest
import trio

from gdevd import runtime as rt
from gdevd.errors import GdevError, KernelFault
from gdevd.gpu.ptx import load_module

from .conftest import raises_errno, run_system

PTX = (Path(__file__).parent / "data" / "vadd.ptx").read_bytes()


class Module:
    """A module loaded into one context the way a CUDA driver does: code + data segment."""

    def __init__(self, code: int, data: int, offsets: dict[str, int]) -> None:
        self.code, self.data, self.offsets = code, data, offsets

    @classmethod
    async def load(cls, h: rt.Handle) -> Module:
        code = await rt.gmalloc(h, len(PTX))
        await rt.gmemcpy_to_device(h, code, PTX, len(PTX))
        layout = load_module(PTX.decode()).data_layout()
        data = await rt.gmalloc(h, layout.size)
        await rt.gmemcpy_to_device(h, data, layout.image, layout.size)
        return cls(code, data, layout.offsets)

    def kernel(self, name: str, params: bytes, grid: int, block: int) -> rt.GdevKernel:
        return rt.GdevKernel(self.code, len(PTX), name, grid=(grid, 1, 1), block=(block, 1, 1),
                             params=params, data_addr=self.data)


async def _vadd(h: rt.Handle, mod: Module, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = (rng.integers(-1000, 1000, n, dtype=np.int32) for _ in range(2))
    va, vb, vc = [await rt.gmalloc(h, 4 * n) for _ in range(3)]
    await rt.gmemcpy_to_device(h, va, a, 4 * n)
    await rt.gmemcpy_to_device(h, vb, b, 4 * n)
    k = mod.kernel("vadd", struct.pack("<QQQi", va, vb, vc, n), (n + 127) // 128, 128)
    await rt.gsync(h, await rt.glaunch(h, k), timeout=120)
    c = np.empty(n, np.int32)
    await rt.gmemcpy_from_device(h, c, vc, 4 * n)
    assert np.array_equal(c, a + b)


async def _launched(h: rt.Handle, mod: Module) -> int:
    out = bytearray(4)
    await rt.gmemcpy_from_device(h, out, mod.data + mod.offsets["launched"], 4)
    return int.from_bytes(out, "little")


def test_vadd_with_a_partial_block_and_a_module_global() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        mod = await Module.load(h)
        await _vadd(h, mod, 1000, 1)                          # 8 blocks, the last one partial
        await _vadd(h, mod, 77, 2)
        assert await _launched(h, mod) == 2                    # the global lives in h's memory
        assert s.physical[0].modules.misses == 1 and s.physical[0].modules.hits == 1
    run_system(body)


def test_a_fault_kills_only_its_context() -> None:
    async def body(s: rt.GdevSystem) -> None:
        victim, bystander = await rt.gopen(s, 0), await rt.gopen(s, 1)
        mv, mb = await Module.load(victim), await Module.load(bystander)
        theirs = await rt.gmalloc(bystander, 4096)            # valid there, not in victim
        fid = await rt.glaunch(victim, mv.kernel("poke", struct.pack("<Q", theirs + 8192),
                                                 1, 32))
        async with trio.open_nursery() as n:
            n.start_soon(_vadd, bystander, mb, 5000, 3)
            with pytest.raises(KernelFault) as info:
                await rt.gsync(victim, fid, timeout=120)
        assert info.value.errno == errno.EFAULT
        with raises_errno(errno.EFAULT):
            await rt.glaunch(victim, mv.kernel("poke", struct.pack("<Q", theirs), 1, 1))
        await _vadd(bystander, mb, 100, 4)
        out = np.zeros(1024, np.int32)
        await rt.gmemcpy_from_device(bystander, out, theirs, 4096)
        assert not out.any()                                  # the victim wrote nothing there
    run_system(body)


def test_launch_errors_from_the_executor_are_synchronous() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        mod = await Module.load(h)
        with pytest.raises(GdevError):
            await rt.glaunch(h, mod.kernel("nosuch", b"", 1, 1))
        with raises_errno(errno.EINVAL):
            await rt.glaunch(h, mod.kernel("vadd", b"\0" * 7, 1, 1))     # params size
        with raises_errno(errno.EINVAL):
            await rt.glaunch(h, mod.kernel("poke", b"\0" * 8, 1, 2048))  # block too large
        assert h.fault is None and not h.pending
    run_system(body)


def test_the_watchdog_ends_a_runaway_kernel_with_etime() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h, other = await rt.gopen(s, 0), await rt.gopen(s, 1)
        mod, mo = await Module.load(h), await Module.load(other)
        flag = await rt.gmalloc(h, 4096)
        fid = await rt.glaunch(h, mod.kernel("spin", struct.pack("<Q", flag), 1, 32))
        with pytest.raises(KernelFault) as info:
            await rt.gsync(h, fid, timeout=60)
        assert info.value.errno == errno.ETIME
        await _vadd(other, mo, 64, 5)                          # the engine is free again
    run_system(body, watchdog=0.3)


def test_gclose_stops_a_kernel_that_would_run_forever() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h, other = await rt.gopen(s, 0), await rt.gopen(s, 1)
        mod, mo = await Module.load(h), await Module.load(other)
        flag = await rt.gmalloc(h, 4096)
        fid = await rt.glaunch(h, mod.kernel("spin", struct.pack("<Q", flag), 2, 64))
        with raises_errno(errno.ETIME):
            await rt.gsync(h, fid, timeout=0.2)
        with trio.fail_after(10):
            await rt.gclose(h)
        await _vadd(other, mo, 64, 6)
    run_system(body)
