"""A context's device heap (gdevd/runtime/heap.py) and glimit: reserved in the context's own
memory by the first kernel calling malloc, charged to its vGPU, sized by the limit until
then and fixed after, out of reach of other contexts and of gfree, freed with the context."""

from __future__ import annotations

import errno
import struct
from pathlib import Path

import numpy as np
import pytest

from gdevd import runtime as rt
from gdevd.errors import KernelFault
from gdevd.gpu.ptx import load_module
from gdevd.ioctl.session import Session
from libgdev import abi
from libgdev.connection import Connection
from tests.loopback import Loopback, errno_of
from tests.memory.conftest import run_swappy

from .conftest import MiB, raises_errno, run_system

PTX = (Path(__file__).resolve().parents[1] / "ptx" / "data" / "heap.ptx").read_bytes()
HEAP = rt.GDEV_LIMIT_MALLOC_HEAP_SIZE


async def _module(h: rt.Handle) -> tuple[int, int]:
    """(code, data) addresses of tests/ptx/data/heap.ptx loaded in ``h``."""
    code = await rt.gmalloc(h, len(PTX))
    await rt.gmemcpy_to_device(h, code, PTX, len(PTX))
    layout = load_module(PTX.decode()).data_layout()
    data = await rt.gmalloc(h, max(layout.size, 1))
    return code, data


async def _run(h: rt.Handle, mod: tuple[int, int], name: str, threads: int, fmt: str,
               *args: int) -> None:
    k = rt.GdevKernel(mod[0], len(PTX), name, grid=(1, 1, 1), block=(threads, 1, 1),
                      params=struct.pack("<" + fmt, *args), data_addr=mod[1])
    await rt.gsync(h, await rt.glaunch(h, k), timeout=60)


async def _get(h: rt.Handle, va: int, n: int, dtype) -> np.ndarray:
    out = np.zeros(n, dtype)
    await rt.gmemcpy_from_device(h, out, va, out.nbytes)
    return out


def test_the_limit_sizes_the_heap_until_a_kernel_uses_it() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        assert await rt.glimit(h, HEAP) == 8 * MiB
        assert await rt.glimit(h, HEAP, MiB + 1) == MiB + 4096     # whole pages
        assert await rt.glimit(h, HEAP) == MiB + 4096
        mod = await _module(h)
        used = h.vgpu.memory_used
        out = await rt.gmalloc(h, 4 * 32)
        await _run(h, mod, "exhaust", 32, "QQ", out, 1024)
        assert h.vgpu.memory_used - used == 4096 + MiB + 4096      # out, then the heap
        assert (await _get(h, out, 32, np.int32) == 1).all()
        with raises_errno(errno.EINVAL) as info:
            await rt.glimit(h, HEAP, 2 * MiB)
        assert "in use" in str(info.value)
        assert await rt.glimit(h, HEAP) == MiB + 4096
        await _run(h, mod, "exhaust", 32, "QQ", out, 1024)          # the same heap again
        assert h.vgpu.memory_used - used == 4096 + MiB + 4096
    run_system(body)


@pytest.mark.parametrize("value", [0, -1, True, 1.5])
def test_a_bad_limit_is_einval_and_changes_nothing(value) -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        with raises_errno(errno.EINVAL):
            await rt.glimit(h, HEAP, value)
        with raises_errno(errno.EINVAL):
            await rt.glimit(h, 99, MiB)
        assert await rt.glimit(h, HEAP) == 8 * MiB
    run_system(body)


def test_a_heap_beyond_the_share_is_refused_at_once_or_at_launch() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        with raises_errno(errno.ENOMEM) as info:
            await rt.glimit(h, HEAP, 16 * MiB + 1)           # the vGPU has 16 MiB
        assert "memory share" in str(info.value)
        assert await rt.glimit(h, HEAP, 16 * MiB) == 16 * MiB
        mod = await _module(h)
        out = await rt.gmalloc(h, 4)
        with raises_errno(errno.ENOMEM):
            await _run(h, mod, "exhaust", 1, "QQ", out, 16)
        assert h.heap is None
        assert await rt.glimit(h, HEAP, MiB) == MiB          # still unused: settable
        await _run(h, mod, "exhaust", 1, "QQ", out, 16)
        assert (await _get(h, out, 1, np.int32) == 1).all()
    run_system(body)


def test_the_heap_is_out_of_reach_of_another_context_and_of_gfree() -> None:
    async def body(s: rt.GdevSystem) -> None:
        a, b = await rt.gopen(s, 0), await rt.gopen(s, 0)
        for h in (a, b):
            await rt.glimit(h, HEAP, MiB)
        mod_a, mod_b = await _module(a), await _module(b)
        slots, sums = await rt.gmalloc(a, 8 * 32), await rt.gmalloc(a, 4 * 32)
        await _run(a, mod_a, "keep", 32, "QI", slots, 7)
        ptrs = await _get(a, slots, 32, np.uint64)
        b_slots, b_sums = await rt.gmalloc(b, 8 * 32), await rt.gmalloc(b, 4 * 32)
        await rt.gmemcpy_to_device(b, b_slots, ptrs, ptrs.nbytes)
        with pytest.raises(KernelFault):       # a's pointers are nothing b's heap gave
            await _run(b, mod_b, "use_and_free", 32, "QQI", b_slots, b_sums, 7)
        with raises_errno(errno.EINVAL):
            await rt.gfree(a, a.heap.base)
        await _run(a, mod_a, "use_and_free", 32, "QQI", slots, sums, 7)
        assert (await _get(a, sums, 32, np.int32) == 7 * np.arange(32) + 21).all()
        assert a.heap.used == 0
    run_system(body)


def test_ctx_limit_over_the_ioctl_socket(loopback: Loopback) -> None:
    def client(conn: Connection, session: Session) -> None:
        def call(flags: int, value: int, limit: int = HEAP) -> int:
            return conn.call(abi.CTX_LIMIT, abi.Limit(limit, flags, value)).fields.size
        assert call(0, 0) == 8 * MiB
        assert call(abi.LIMIT_SET, MiB + 1) == MiB + 4096 == call(0, 0)
        for bad in (dict(limit=HEAP, flags=0x2, value=0), dict(limit=HEAP, flags=0, value=1),
                    dict(limit=7, flags=0, value=0), dict(limit=HEAP, flags=1, value=0)):
            assert errno_of(conn, "CTX_LIMIT", **bad) == errno.EINVAL
        assert errno_of(conn, "CTX_LIMIT", limit=HEAP, flags=1, value=1 << 62) == errno.ENOMEM
        assert call(0, 0) == MiB + 4096

    def check(system: rt.GdevSystem, sessions: list[Session]) -> None:
        assert sessions[0].handle.heap_limit == MiB + 4096
    loopback.serve(client, memory=64 << 20, check=check)


def test_the_heap_is_swapped_like_any_block_and_its_data_survive() -> None:
    async def body(s: rt.GdevSystem) -> None:
        a, b = await rt.gopen(s, 0), await rt.gopen(s, 0)    # one 8 MiB share
        await rt.glimit(a, HEAP, 2 * MiB)
        mod = await _module(a)
        slots, sums = await rt.gmalloc(a, 8 * 64), await rt.gmalloc(a, 4 * 64)
        await _run(a, mod, "keep", 64, "QI", slots, 9)
        heap = a.lookup(a.heap.base)
        hog = await rt.gmalloc(b, 7 * MiB)                   # evicts a's heap
        assert heap.block.resident_bytes < heap.size
        await _run(a, mod, "use_and_free", 64, "QQI", slots, sums, 9)
        assert heap.block.resident_bytes == heap.size
        assert (await _get(a, sums, 64, np.int32) == 9 * np.arange(64) + 36).all()
        assert b.lookup(hog).block.resident_bytes < 7 * MiB
    run_swappy(body)
