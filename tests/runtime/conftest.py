"""Helpers for the runtime's tests: run a body against a fresh system, then fsck it."""

from __future__ import annotations

import errno
from collections.abc import Awaitable, Callable
from contextlib import contextmanager
from typing import Any

import pytest
import trio

from gdevd.errors import GdevError
from gdevd.runtime import GdevConfig, GdevSystem

MiB = 1 << 20

#: a small machine: 64 MiB (16 MiB per vGPU), 64 KiB chunks so pipelines have many stages;
#: no swap, so a full share or device is ENOMEM here (tests/memory exercise swapping)
SMALL = dict(memory=64 * MiB, dma_memory=32 * MiB, vgpus=4, chunk_size=64 << 10,
             iowrite_limit=4096, ioread_limit=4096, swap_percent=0, host_swap=0)


def run_system(body: Callable[[GdevSystem], Awaitable[Any]], **config: Any) -> Any:
    """Run ``body(system)`` in a fresh trio loop; check the invariants after it.

    The invariants are checked while the system is up (after the body) and the teardown
    (which closes every context left open) must leave nothing allocated.
    """
    cfg = GdevConfig(**{**SMALL, **config})

    async def main() -> Any:
        async with GdevSystem(cfg) as system:
            result = await body(system)
            system.check_invariants()
        assert not system.handles
        assert all(v.memory_used == 0 and v.dma_used == 0 for v in system.virtual)
        return result
    return trio.run(main)


@contextmanager
def raises_errno(err: int):  # type: ignore[no-untyped-def]
    """Expect a GdevError carrying ``err``."""
    with pytest.raises(GdevError) as info:
        yield info
    assert info.value.errno == err, f"expected {errno.errorcode[err]}, got {info.value!r}"
