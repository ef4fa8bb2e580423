"""gmodule_load / gmodule_launch / gmodule_unload in process (the real PTX executor)."""

from __future__ import annotations

import errno
import struct
from pathlib import Path

import numpy as np

from gdevd import runtime as rt
from gdevd.runtime import api_module

from .conftest import raises_errno, run_system

MADD = (Path(__file__).resolve().parents[2] / "kernels" / "madd.ptx").read_bytes()


async def _madd(h: rt.Handle, table, n: int = 16) -> np.ndarray:  # type: ignore[no-untyped-def]
    a = np.arange(n * n, dtype=np.uint32)
    d = [await rt.gmalloc(h, a.nbytes) for _ in range(3)]
    await rt.gmemcpy_to_device(h, d[0], a, a.nbytes)
    await rt.gmemcpy_to_device(h, d[1], a, a.nbytes)
    fence = await rt.gmodule_launch(h, table.module_id, 0, (1, 1, 1), (16, 16, 1), 0,
                                    struct.pack("<QQQI", *d, n))
    await rt.gsync(h, fence)
    c = np.empty_like(a)
    await rt.gmemcpy_from_device(h, c, d[2], c.nbytes)
    return c - 2 * a


def test_a_launch_uses_the_loaded_module_without_reading_its_code_again() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        table = await rt.gmodule_load(h, MADD, "madd.ptx")
        loaded = api_module._LOADED[h][table.module_id]
        junk = bytes(loaded.code_size)  # the code in device memory is no PTX any more
        await rt.gmemcpy_to_device(h, loaded.code_addr, junk, len(junk))
        assert not (await _madd(h, table)).any()
        await rt.gmodule_unload(h, table.module_id)
        with raises_errno(errno.ENOENT):
            await rt.gmodule_unload(h, table.module_id)
        await rt.gclose(h)
    run_system(body)


def test_unload_and_close_free_the_module_memory() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        used = h.vgpu.memory_used
        table = await rt.gmodule_load(h, MADD + b"\0", "madd.ptx")
        assert h.vgpu.memory_used > used
        await rt.gmodule_unload(h, table.module_id)
        assert h.vgpu.memory_used == used
        await rt.gmodule_load(h, MADD, "madd.ptx")
        await rt.gclose(h)  # run_system checks that nothing is left allocated
    run_system(body)


def test_a_data_segment_too_large_to_lay_out_is_enomem() -> None:
    huge = (b".version 7.0\n.target sm_75\n.address_size 64\n"
            b".global .align 4 .b8 big[40000000000000];\n.visible .entry k() { ret; }\n")

    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        with raises_errno(errno.ENOMEM):
            await rt.gmodule_load(h, huge, "huge.ptx")
        await rt.gclose(h)
    run_system(body)
