"""Dynamic parallelism through the runtime, as two tenants (tests/ptx/data/devrt.cu): a
launch bomb (every grid launches two more) ends at the watchdog with ETIME, its tenant's
context faulted, while the other tenant's kernel trees and plain launches run; each launch
tree's parameter buffers are memory of its own context, held while it lives and freed when
it retires (the fsck after each test finds nothing held), as many as gtune's
GDEV_TUNE_DEVRT_PENDING says."""

from __future__ import annotations

import errno
import struct
from pathlib import Path

import numpy as np
import pytest

from gdevd import runtime as rt
from gdevd.errors import GdevError
from gdevd.gpu.ptx import load_module
from gdevd.runtime import GdevSystem
from gdevd.runtime import constants as C
from gdevd.runtime import defaults as D
from tests.hostile.test_limits_runtime import run, user
from tests.memory.kernels import load_madd, madd

PTX = (Path(__file__).parents[1] / "ptx" / "data" / "devrt.ptx").read_bytes()


LAYOUT = load_module(PTX.decode(), "devrt").data_layout()    # printf's format strings


async def _load(h: rt.Handle) -> tuple[int, int]:
    """(code, data) addresses of the module in ``h``."""
    code, data = await rt.gmalloc(h, len(PTX)), await rt.gmalloc(h, LAYOUT.size)
    await rt.gmemcpy_to_device(h, code, PTX, len(PTX))
    await rt.gmemcpy_to_device(h, data, LAYOUT.image, LAYOUT.size)
    return code, data


def _kernel(mod: tuple[int, int], name: str, grid: int, block: int,
            params: bytes) -> rt.GdevKernel:
    return rt.GdevKernel(mod[0], len(PTX), name, grid=(grid, 1, 1), block=(block, 1, 1),
                         params=params, data_addr=mod[1])


async def _zeros(h: rt.Handle, n: int) -> int:
    va = await rt.gmalloc(h, 4 * n)
    await rt.gmemcpy_to_device(h, va, bytes(4 * n), 4 * n)
    return va


async def _get(h: rt.Handle, va: int, n: int) -> np.ndarray:
    out = np.zeros(n, np.int32)
    await rt.gmemcpy_from_device(h, out, va, 4 * n)
    return out


def test_a_launch_bomb_ends_at_the_watchdog_alone() -> None:
    async def body(s: GdevSystem) -> None:
        mallory, alice = await rt.gopen(s, 0, user(1000)), await rt.gopen(s, 0, user(1001))
        code_m = await _load(mallory)
        count, err = await _zeros(mallory, 2), await _zeros(mallory, 1)
        bomb = await rt.glaunch(mallory, _kernel(code_m, "bomb", 1, 1,
                                                 struct.pack("<QQ", count, err)))
        # alice meanwhile: a tree of grids and a plain launch
        code_a, madd_code = await _load(alice), await load_madd(alice)
        out = await _zeros(alice, 4 * 32)
        tree = await rt.glaunch(alice, _kernel(code_a, "parent", 4, 32, struct.pack("<Q", out)))
        await rt.gsync(alice, tree, timeout=120)
        assert (await _get(alice, out, 128) == np.arange(128)).all()
        a, b, c = [await rt.gmalloc(alice, 4 * 32 * 32) for _ in range(3)]
        await rt.gmemcpy_to_device(alice, a, np.arange(1024, dtype=np.uint32).tobytes(), 4096)
        await rt.gmemcpy_to_device(alice, b, np.ones(1024, np.uint32).tobytes(), 4096)
        await madd(alice, madd_code, a, b, c, 32)
        assert (await _get(alice, c, 1024) == np.arange(1024) + 1).all()
        with pytest.raises(GdevError) as exc:
            await rt.gsync(mallory, bomb, timeout=120)
        assert exc.value.errno == errno.ETIME and "watchdog" in str(exc.value)
        # the arenas went back when the launches retired: only the tenants' buffers are held
        assert [o.va for o in mallory.space.objects] == sorted([*code_m, count, err])
        assert [o.va for o in alice.space.objects] == sorted([*code_a, madd_code, out, a, b, c])
        await rt.gclose(mallory)
        await rt.gclose(alice)
    run(body, watchdog=1.0)


def test_the_arena_is_charged_to_the_launching_context() -> None:
    async def body(s: GdevSystem) -> None:
        h = await rt.gopen(s, 0, user(1000))
        code = await _load(h)
        out = await _zeros(h, 4 * 32)
        before = len(h.space.objects)
        fence = await rt.glaunch(h, _kernel(code, "parent", 4, 32, struct.pack("<Q", out)))
        assert len(h.space.objects) == before + 1           # the arena, while it lives
        await rt.gsync(h, fence, timeout=120)
        assert len(h.space.objects) == before
        assert (await _get(h, out, 128) == np.arange(128)).all()
        await rt.gclose(h)
    run(body)


def test_gtune_sets_the_pending_launches_of_later_launches() -> None:
    async def body(s: GdevSystem) -> None:
        h = await rt.gopen(s, 0, user(1000))
        for bad in (0, D.DEVRT_PENDING_MAX + 1, True):
            with pytest.raises(GdevError) as exc:
                await rt.gtune(h, C.GDEV_TUNE_DEVRT_PENDING, bad)
            assert exc.value.errno == errno.EINVAL
        assert h.devrt_pending == D.DEVRT_PENDING            # refused: unchanged
        await rt.gtune(h, C.GDEV_TUNE_DEVRT_PENDING, 8)
        mod = await _load(h)
        out, err = await _zeros(h, 64), await _zeros(h, 64)
        await rt.gsync(h, await rt.glaunch(h, _kernel(mod, "many", 1, 64,
                                                      struct.pack("<QQ", out, err))), timeout=120)
        ran = await _get(h, out, 64) == np.arange(64)
        assert ran[:8].all() and ran.sum() == 8             # the first 8 threads' launches
        errs = await _get(h, err, 64)
        assert (errs[8:] == 69).all() and not errs[:8].any()  # cudaErrorLaunchPendingCount...
        await rt.gclose(h)
    run(body)


def test_the_device_runtime_reports_the_gpus_multiprocessors() -> None:
    async def body(s: GdevSystem) -> None:
        h = await rt.gopen(s, 0, user(1000))
        mod = await _load(h)
        out = await _zeros(h, 11)
        await rt.gsync(h, await rt.glaunch(h, _kernel(mod, "queries", 1, 1,
                                                      struct.pack("<Q", out))), timeout=120)
        assert (await _get(h, out, 11))[9:].tolist() == [5, 7]
        await rt.gclose(h)
    run(body, mp_count=5)
