"""Helpers for the memory manager's tests: small machines with swap, byte-exact checks."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np
import trio

from gdevd import runtime as rt
from gdevd.runtime import GdevConfig, GdevSystem

MiB = 1 << 20

#: 9103 pages (35.6 MiB): 10 % (3.6 MiB) temporal swap and four vGPUs of exactly 8 MiB
#: outside it; small copies on the direct path
SWAPPY = dict(memory=9103 * 4096, dma_memory=16 * MiB, vgpus=4, chunk_size=64 << 10,
              iowrite_limit=4096, ioread_limit=4096, swap_percent=10, host_swap=256 * MiB)


def run_swappy(body: Callable[[GdevSystem], Awaitable[Any]], **config: Any) -> Any:
    """Run ``body(system)`` on a fresh swapping machine; fsck after it and after teardown."""
    cfg = GdevConfig(**{**SWAPPY, **config})

    async def main() -> Any:
        async with GdevSystem(cfg) as system:
            result = await body(system)
            await settle_all(system)
            system.check_invariants()
        assert not system.handles and not system.shm.segments
        assert all(v.memory_used == 0 and v.dma_used == 0 and v.swap.swapped_bytes == 0
                   for v in system.virtual)
        assert all(g.swap.host_used == 0 and g.swap.device_used == 0 for g in system.gpus)
        return result
    return trio.run(main)


async def settle_all(system: GdevSystem) -> None:
    """Wait until no block is migrating (the background migrator is idle)."""
    def quiet() -> bool:
        return not any(b.busy is not None for g in system.gpus for b in g.blocks) and \
            not any(g.swap.wake.is_set() for g in system.gpus)
    for _ in range(5000):
        if quiet():
            await trio.sleep(0.002)
            if quiet():
                return
        await trio.sleep(0.001)
    raise AssertionError("swap never settled")


def pattern(seed: int, size: int) -> np.ndarray:
    """``size`` pseudo-random bytes from ``seed``."""
    return np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8)


async def read_back(h: rt.Handle, va: int, size: int) -> np.ndarray:
    """The ``size`` bytes at ``va`` of ``h``."""
    out = np.zeros(size, np.uint8)
    await rt.gmemcpy_from_device(h, out, va, size)
    return out
