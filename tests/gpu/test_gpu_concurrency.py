"""Threads: copies release the GIL, atomics stay atomic across threads, trio wakes on the
engine's eventfd."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import trio

from gdevd.gpu import mmu as M
from gdevd.gpu.copyengine import CopyEngine
from gdevd.gpu.mmu import PAGE_SIZE, Mmu
from gdevd.gpu.vram import Vram


def test_atomics_from_two_threads_lose_no_update() -> None:
    n, rounds = 20000, 5
    with Mmu() as mmu:
        mem = np.zeros(PAGE_SIZE, np.uint8)
        mmu.set_aperture(0, mem)
        mmu.map(0, 0, PAGE_SIZE)
        vas = np.zeros(n, np.uint64)  # every element hits the same word

        def hammer() -> None:
            for _ in range(rounds):
                mmu.atomic_v(vas, M.ATOM_ADD, M.T_U64, 1)

        threads = [threading.Thread(target=hammer) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert int(mem.view(np.uint64)[0]) == 2 * n * rounds


@pytest.mark.timeout(30)
def test_copy_releases_the_gil() -> None:
    """A copy blocked inside C (engine held) must let other Python threads run: otherwise
    this thread could never release the engine and the test would hang (timeout)."""
    size = 8 << 20
    with Vram(size) as vram, Mmu() as mmu, CopyEngine("gil") as ce:
        mmu.set_aperture(0, vram.buffer)
        mmu.map(0, 0, size)
        src = np.ones(size, np.uint8)
        bounce = np.empty(2 << 20, np.uint8)
        ce.hold(True)
        copier = threading.Thread(
            target=ce.htod, args=(mmu, 0, src), kwargs=dict(chunk=1 << 20, depth=2, bounce=bounce))
        copier.start()
        copier.join(0.1)
        assert copier.is_alive()  # blocked in C on the held engine, and we still run
        ce.hold(False)
        copier.join(10)
        assert not copier.is_alive()
        assert mmu.read(size - 1, 1) == b"\x01"


def test_trio_wakes_on_completion_eventfd() -> None:
    async def main() -> None:
        with Mmu() as mmu, CopyEngine("trio") as ce:
            mmu.set_aperture(0, np.zeros(16 * PAGE_SIZE, np.uint8))
            mmu.map(0, 0, 16 * PAGE_SIZE)
            ce.hold(True)
            data = np.arange(16 * PAGE_SIZE, dtype=np.uint64).astype(np.uint8)
            seq = ce.submit_htod(mmu, 0, data)
            with trio.move_on_after(0.05) as scope:
                await trio.lowlevel.wait_readable(ce.fileno())
            assert scope.cancelled_caught  # held: nothing completes, nothing to read
            ce.hold(False)
            with trio.fail_after(5):
                await trio.lowlevel.wait_readable(ce.fileno())
            assert ce.drain_events() == 1 and ce.completed() == seq
            assert mmu.read(0, 16 * PAGE_SIZE) == data.tobytes()

    trio.run(main)
