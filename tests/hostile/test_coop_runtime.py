"""Hostile cooperative launches, driven in process as two tenants: a grid barrier that can
never complete ends at the watchdog (ETIME, the tenant's context faulted) while the other
tenant's cooperative and plain launches run; an oversized grid is refused with EOVERFLOW
and changes nothing; every grid workspace is charged while its launch lives and freed when
it retires (the fsck after each test finds nothing held)."""

from __future__ import annotations

import errno
import struct
from pathlib import Path

import numpy as np
import pytest

from gdevd import runtime as rt
from gdevd.errors import GdevError
from gdevd.runtime import GdevSystem
from gdevd.runtime.coop import WS_SIZE
from tests.hostile.test_limits_runtime import refused, run, user
from tests.memory.kernels import load_madd, madd

PTX = (Path(__file__).parents[1] / "ptx" / "data" / "coop_sync.ptx").read_bytes()


async def _load(h: rt.Handle) -> int:
    code = await rt.gmalloc(h, len(PTX))
    await rt.gmemcpy_to_device(h, code, PTX, len(PTX))
    return code


def _census(code: int, count: int, seen: int, grid: int, quit: int) -> rt.GdevKernel:
    return rt.GdevKernel(code, len(PTX), "census", grid=(grid, 1, 1), block=(32, 1, 1),
                         params=struct.pack("<QQi4x", count, seen, quit), cooperative=True)


async def _buffers(h: rt.Handle, grid: int) -> tuple[int, int]:
    count, seen = await rt.gmalloc(h, 4), await rt.gmalloc(h, 4 * 32 * grid)
    await rt.gmemcpy_to_device(h, count, bytes(4), 4)
    return count, seen


async def _get(h: rt.Handle, va: int, n: int) -> np.ndarray:
    out = np.zeros(n, np.uint32)
    await rt.gmemcpy_from_device(h, out, va, 4 * n)
    return out


def test_a_barrier_that_never_completes_ends_at_the_watchdog_alone() -> None:
    async def body(s: GdevSystem) -> None:
        mallory, alice = await rt.gopen(s, 0, user(1000)), await rt.gopen(s, 0, user(1001))
        code_m = await _load(mallory)
        count_m, seen_m = await _buffers(mallory, 8)
        stuck = await rt.glaunch(mallory, _census(code_m, count_m, seen_m, 8, 5))
        # alice, on the same vGPU meanwhile: a cooperative launch and a plain one
        code_a, madd_code = await _load(alice), await load_madd(alice)
        count_a, seen_a = await _buffers(alice, 40)
        await rt.gsync(alice, await rt.glaunch(alice, _census(code_a, count_a, seen_a, 40, -1)),
                       timeout=120)
        assert (await _get(alice, seen_a, 32 * 40) == 40).all()
        a, b, c = [await rt.gmalloc(alice, 4 * 32 * 32) for _ in range(3)]
        await rt.gmemcpy_to_device(alice, a, np.arange(1024, dtype=np.uint32).tobytes(), 4096)
        await rt.gmemcpy_to_device(alice, b, np.ones(1024, np.uint32).tobytes(), 4096)
        await madd(alice, madd_code, a, b, c, 32)
        assert (await _get(alice, c, 1024) == np.arange(1024) + 1).all()
        with pytest.raises(GdevError) as exc:
            await rt.gsync(mallory, stuck, timeout=120)
        assert exc.value.errno == errno.ETIME and "watchdog" in str(exc.value)
        with pytest.raises(GdevError):          # the fault is sticky, as CUDA's
            await rt.glaunch(mallory, _census(code_m, count_m, seen_m, 8, -1))
        # the workspace went back when the launch retired: only mallory's buffers are held
        assert [o.va for o in mallory.space.objects] == sorted([code_m, count_m, seen_m])
        await rt.gclose(mallory)
        await rt.gclose(alice)
    run(body, watchdog=1.0)


def test_an_oversized_grid_is_refused_and_changes_nothing() -> None:
    async def body(s: GdevSystem) -> None:
        h = await rt.gopen(s, 0, user(1000))
        code = await _load(h)
        count, seen = await _buffers(h, 641)
        used = h.vgpu.memory_used
        # 32-thread blocks: 16 per multiprocessor, 40 multiprocessors
        with pytest.raises(GdevError) as exc:
            await rt.glaunch(h, _census(code, count, seen, 641, -1))
        assert exc.value.errno == errno.EOVERFLOW and "at most 640" in str(exc.value)
        assert h.vgpu.memory_used == used and h.fault is None
        await rt.gsync(h, await rt.glaunch(h, _census(code, count, seen, 640, -1)), timeout=300)
        assert h.vgpu.memory_used == used        # the workspace was freed at retirement
        await rt.gclose(h)
    run(body)


def test_a_tenant_freeing_its_workspace_waits_and_frees_nothing_twice() -> None:
    async def body(s: GdevSystem) -> None:
        h = await rt.gopen(s, 0, user(1000))
        code = await _load(h)
        count, seen = await _buffers(h, 4)
        used = h.vgpu.memory_used
        fence = await rt.glaunch(h, _census(code, count, seen, 4, -1))
        ws = max(o.va for o in h.space.objects)      # the newest mapping: the workspace
        assert h.vgpu.memory_used == used + WS_SIZE
        # gfree waits for the launch, which gives its workspace back as it retires
        await refused(errno.ENOENT, rt.gfree, h, ws)
        await rt.gsync(h, fence)
        assert h.vgpu.memory_used == used and h.fault is None
        await rt.gclose(h)
    run(body)
