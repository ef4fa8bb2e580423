"""gdevd.gdev: the synchronous facade over a background kernel thread."""

from __future__ import annotations

import errno

import numpy as np
import pytest

from gdevd import gdev
from gdevd.errors import GdevError

from .conftest import MiB, raises_errno


@pytest.fixture
def booted():  # type: ignore[no-untyped-def]
    system = gdev.boot(gdev.GdevConfig(memory=32 * MiB, dma_memory=8 * MiB, vgpus=2))
    try:
        yield system
    finally:
        gdev.shutdown()


def test_verbs_round_trip_and_context_manager(booted) -> None:  # type: ignore[no-untyped-def]
    assert gdev.gdevice_count() == 2
    with gdev.gopen(1) as h:
        va = gdev.gmalloc(h, MiB)
        data = np.arange(MiB, dtype=np.uint8)
        gdev.gmemcpy_to_device(h, va, data, MiB)
        pin = gdev.gmalloc_dma(h, MiB)
        fid = gdev.gmemcpy_from_device_async(h, pin, va, MiB)
        gdev.gsync(h, fid, timeout=5)
        assert np.array_equal(pin.array, data)
        assert gdev.gvirtget(h, pin) == pin.va
        assert gdev.gquery(h, gdev.GDEV_QUERY_DEVICE_MEM_SIZE) == 15_097_856  # half of 32 MiB
        # less its 10 % temporal swap area, in pages
        gdev.gtune(h, gdev.GDEV_TUNE_MEMCPY_CHUNK_SIZE, 1 << 20)
        gdev.check_invariants()
        assert booted.virtual[1].memory_used == MiB
    assert h.handle.closed and booted.virtual[1].memory_used == 0
    with raises_errno(errno.EBADF):
        gdev.gmalloc(h, 1)


def test_errors_cross_the_thread_and_boot_twice_is_refused(booted) -> None:  # type: ignore
    with raises_errno(errno.ENODEV):
        gdev.gopen(5)
    with raises_errno(errno.EBUSY):
        gdev.boot()
    assert gdev.system() is booted


def test_shutdown_closes_open_contexts_and_a_bad_config_does_not_boot() -> None:
    system = gdev.boot(gdev.GdevConfig(memory=8 * MiB))
    h = gdev.gopen(0)
    gdev.gmalloc(h, 4096)
    gdev.shutdown()
    assert h.handle.closed and not system.handles
    gdev.shutdown()                                        # no-op
    with pytest.raises(GdevError):
        gdev.boot(gdev.GdevConfig(gpus=0))
    with gdev.gopen(0) as h2:                              # boots the default machine
        assert gdev.gquery(h2, gdev.GDEV_QUERY_DEVICE_MEM_SIZE) == 1_932_734_464  # 25 % of 8 GiB
        # less its 10 % temporal swap area, in pages
    gdev.shutdown()
