"""Huge-page backing of the copy paths' large buffers: VRAM and the bounce buffers.

The kernel records ``madvise(MADV_HUGEPAGE)`` as the ``hg`` flag of the mapping
(``/proc/self/smaps``), whatever the system's THP mode; without THP in the kernel the advice
fails and there is nothing to check.
"""

from __future__ import annotations

import errno
import os

import numpy as np
import pytest
import trio

from gdevd.errors import GdevError
from gdevd.gpu.hostpages import HUGE, huge_buffer
from gdevd.gpu.vram import Vram
from gdevd.runtime import GdevConfig, GdevSystem, gopen

MiB = 1 << 20
needs_thp = pytest.mark.skipif(not os.path.isdir("/sys/kernel/mm/transparent_hugepage"),
                               reason="kernel without transparent huge pages: "
                                      "MADV_HUGEPAGE is refused, no flag to check")


def vm_flags(address: int) -> set[str]:
    """The VmFlags of this process's mapping that holds ``address``."""
    inside = False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo <= address < hi
            elif inside and head == "VmFlags:":
                return set(line.split()[1:])
    raise AssertionError(f"no mapping holds {address:#x}")


def test_huge_buffer_is_aligned_zeroed_writable_and_exact() -> None:
    buf = huge_buffer(3 * MiB + 5)
    assert buf.size == 3 * MiB + 5 and buf.dtype == np.uint8
    assert buf.ctypes.data % HUGE == 0
    assert not buf.any()
    buf[-1] = 7
    assert buf[-1] == 7


def test_huge_buffer_views_keep_the_mapping_alive() -> None:
    view = huge_buffer(4 * MiB)[MiB:2 * MiB]
    view[:] = 3                    # the parent array is gone; its mapping must not be
    assert int(view.sum()) == 3 * MiB


def test_huge_buffer_sizes() -> None:
    assert huge_buffer(0).size == 0
    with pytest.raises(GdevError) as info:
        huge_buffer(-1)
    assert info.value.errno == errno.EINVAL


@needs_thp
def test_huge_buffer_is_advised_huge() -> None:
    buf = huge_buffer(4 * MiB)
    assert "hg" in vm_flags(buf.ctypes.data)


@needs_thp
def test_vram_is_advised_huge() -> None:
    with Vram(8 * MiB) as vram:
        assert "hg" in vm_flags(vram.buffer.ctypes.data)


@needs_thp
def test_bounce_buffers_are_huge_and_follow_gtune() -> None:
    async def main() -> None:
        async with GdevSystem(GdevConfig(memory=64 * MiB, vgpus=1)) as system:
            h = await gopen(system, 0)
            assert "hg" in vm_flags(h.bounce.slots.ctypes.data)
            assert h.bounce.slots.size == h.bounce.chunk_size * h.bounce.pipeline_count
            h.bounce.set(MiB, 3)
            assert "hg" in vm_flags(h.bounce.slots.ctypes.data) and h.bounce.slots.size == 3 * MiB
    trio.run(main)
