"""Copy engines against a model: a flat numpy array standing for the virtual range.

Device memory is mapped in runs of pages scattered over VRAM (so copies cross physical
discontinuities), and each copy is checked byte for byte against the model.
"""

from __future__ import annotations

import errno
import select
import threading
import time

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

from gdevd.errors import GdevError, MmuFault
from gdevd.gpu.copyengine import CopyEngine
from gdevd.gpu.mmu import ACC_READ, PAGE_SIZE, Mmu
from gdevd.gpu.vram import Vram

SPAN = 4 << 20  # virtual range under test
BASE = 0x7_0000_0000
MiB = 1 << 20
CE = settings(max_examples=50, deadline=None)




class Device:
    """A VRAM, one address space mapping SPAN bytes at BASE (physically shuffled), a model."""

    def __init__(self, seed: int = 0) -> None:
        self.vram = Vram(2 * SPAN)
        self.mmu = Mmu()
        self.mmu.set_aperture(0, self.vram.buffer)
        rng = np.random.default_rng(seed)
        for i, phys in enumerate(rng.permutation(SPAN // (64 * 1024))):
            # 64 KiB runs of contiguous pages, shuffled: coalescing and its edges both run
            self.mmu.map(BASE + i * 65536, SPAN + int(phys) * 65536, 65536)
        self.model = rng.integers(0, 256, SPAN, np.uint8)
        self.mmu.write(BASE, self.model)

    def check(self) -> None:
        assert np.array_equal(np.frombuffer(self.mmu.read(BASE, SPAN), np.uint8), self.model)

    def close(self) -> None:
        self.mmu.close()
        self.vram.close()


@pytest.fixture(scope="module")
def dev() -> Device:
    d = Device()
    yield d
    d.close()


@pytest.fixture(scope="module")
def ce() -> CopyEngine:
    with CopyEngine("test-ce") as engine:
        yield engine


sizes = st.one_of(st.integers(0, 3 * PAGE_SIZE), st.integers(0, 3 * MiB))
chunks = st.one_of(st.sampled_from([4096, 65536, 256 * 1024, MiB]), st.integers(4096, MiB))


@CE
@given(size=sizes, off=st.integers(0, SPAN), chunk=chunks, depth=st.integers(1, 4),
       seed=st.integers(0, 255))
def test_htod_dtoh_match_model(dev: Device, ce: CopyEngine, size: int, off: int, chunk: int,
                               depth: int, seed: int) -> None:
    off = min(off, SPAN - size)
    data = np.random.default_rng(seed).integers(0, 256, size, np.uint8)
    bounce = np.empty(chunk * depth, np.uint8)
    ce.htod(dev.mmu, BASE + off, data, chunk=chunk, depth=depth, bounce=bounce)
    dev.model[off:off + size] = data
    back = np.zeros(size, np.uint8)
    ce.dtoh(dev.mmu, back, BASE + off, chunk=chunk, depth=depth, bounce=bounce)
    assert np.array_equal(back, data)
    dev.check()


@CE
@given(size=st.integers(1, 2 * MiB), off=st.integers(0, SPAN), hole=st.integers(0, 2 * MiB),
       chunk=chunks, depth=st.integers(1, 4), to_dev=st.booleans())
def test_fault_in_the_middle_moves_nothing(dev: Device, ce: CopyEngine, size: int, off: int,
                                          hole: int, chunk: int, depth: int,
                                          to_dev: bool) -> None:
    off = min(off, SPAN - size)
    hole_va = (BASE + off + min(hole, size - 1)) & ~(PAGE_SIZE - 1)
    pa = dev.mmu.translate(hole_va)[1]
    dev.mmu.unmap(hole_va, PAGE_SIZE)
    bounce = np.empty(chunk * depth, np.uint8)
    host = np.full(size, 0xA5, np.uint8)
    try:
        with pytest.raises(MmuFault) as info:
            if to_dev:
                ce.htod(dev.mmu, BASE + off, host, chunk=chunk, depth=depth, bounce=bounce)
            else:
                ce.dtoh(dev.mmu, host, BASE + off, chunk=chunk, depth=depth, bounce=bounce)
        assert info.value.va == max(hole_va, BASE + off)
        assert info.value.reason == "unmapped"
    finally:
        dev.mmu.map(hole_va, pa, PAGE_SIZE)
    assert (host == 0xA5).all()  # dtoh wrote nothing to the host either
    dev.check()


@CE
@given(size=sizes, src=st.integers(0, SPAN), dst=st.integers(0, SPAN),
       chunk=chunks, other=st.booleans())
def test_dtod_between_address_spaces(dev: Device, ce: CopyEngine, size: int, src: int,
                                    dst: int, chunk: int, other: bool) -> None:
    src, dst = min(src, SPAN - size), min(dst, SPAN - size)
    if src < dst + size and dst < src + size:
        dst = (src + size) % max(1, SPAN - size)  # no overlap: the model is memcpy
        if dst < src + size and src < dst + size:
            return
    target = Mmu() if other else dev.mmu
    try:
        if other:  # a second context sharing the same VRAM at another virtual address
            target.set_aperture(0, dev.vram.buffer)
            for va in range(BASE, BASE + SPAN, 65536):
                target.map(va + (1 << 32), dev.mmu.translate(va)[1], 65536)
        shift = (1 << 32) if other else 0
        ce.dtod(target, BASE + dst + shift, dev.mmu, BASE + src, size, chunk=chunk)
    finally:
        if other:
            target.close()
    dev.model[dst:dst + size] = dev.model[src:src + size].copy()
    dev.check()


def test_async_jobs_complete_in_order_and_signal(dev: Device) -> None:
    with CopyEngine("async") as ce:
        assert ce.completed() == 0
        assert not select.select([ce.fileno()], [], [], 0)[0]
        ce.hold(True)
        blocks = [np.full(10000, i, np.uint8) for i in range(5)]
        seqs = [ce.submit_htod(dev.mmu, BASE + i * 10000, b) for i, b in enumerate(blocks)]
        assert seqs == [1, 2, 3, 4, 5]
        assert not ce.wait(seqs[0], timeout=0.01)
        assert ce.completed() == 0
        with pytest.raises(GdevError) as info:
            ce.error(5)
        assert info.value.errno == errno.EAGAIN
        assert not select.select([ce.fileno()], [], [], 0)[0]
        ce.hold(False)
        assert ce.wait(seqs[-1], timeout=5)
        assert ce.completed() == 5
        assert select.select([ce.fileno()], [], [], 1)[0]
        assert 1 <= ce.drain_events() <= 5
        assert ce.drain_events() == 0
        for i, b in enumerate(blocks):
            dev.model[i * 10000:(i + 1) * 10000] = b
        out = np.zeros(50000, np.uint8)
        ce.wait(ce.submit_dtoh(dev.mmu, out, BASE))
        assert np.array_equal(out, dev.model[:50000])
        seq = ce.submit_dtod(dev.mmu, BASE + MiB, dev.mmu, BASE, 50000)
        assert ce.wait(seq, timeout=None) and ce.error(seq) is None
        dev.model[MiB:MiB + 50000] = dev.model[:50000]
    dev.check()


def test_async_job_that_faults_records_its_error(dev: Device) -> None:
    mmu = Mmu()
    mmu.set_aperture(0, np.zeros(8 * PAGE_SIZE, np.uint8))
    mmu.map(0, 0, 8 * PAGE_SIZE)
    with CopyEngine("fault") as ce:
        ce.hold(True)
        seq = ce.submit_htod(mmu, 100, np.ones(3 * PAGE_SIZE, np.uint8))
        ok = ce.submit_dtod(mmu, 0, mmu, 4 * PAGE_SIZE, PAGE_SIZE)
        mmu.unmap(2 * PAGE_SIZE, PAGE_SIZE)  # the page vanishes before the job runs
        ce.hold(False)
        with pytest.raises(GdevError) as info:
            ce.wait(seq)
        assert info.value.errno == errno.EFAULT
        assert ce.error(seq).errno == errno.EFAULT
        assert ce.wait(ok) and ce.error(ok) is None
    mmu.close()


def test_submit_validates_before_queueing(dev: Device) -> None:
    with CopyEngine("v") as ce:
        with pytest.raises(MmuFault) as info:
            ce.submit_htod(dev.mmu, BASE + SPAN - 10, np.zeros(20, np.uint8))
        assert info.value.va == BASE + SPAN
        with pytest.raises(GdevError) as info2:
            ce.wait(1)
        assert info2.value.errno == errno.EINVAL
        with pytest.raises(MmuFault):
            ce.submit_dtod(dev.mmu, BASE, dev.mmu, 0, 1)


def test_mmu_closed_while_job_queued_stays_alive() -> None:
    vram = Vram(16 * PAGE_SIZE)
    mmu = Mmu()
    mmu.set_aperture(0, vram.buffer)
    mmu.map(0, 0, 16 * PAGE_SIZE, flags=ACC_READ | 2)
    out = np.zeros(16 * PAGE_SIZE, np.uint8)
    vram.buffer[:] = 7
    with CopyEngine("life") as ce:
        ce.hold(True)
        seq = ce.submit_dtoh(mmu, out, 0)
        mmu.close()
        vram.close()
        del mmu, vram
        ce.hold(False)
        assert ce.wait(seq)
    assert (out == 7).all()


@pytest.mark.parametrize("kw", [
    dict(chunk=4095, depth=1), dict(chunk=(32 << 20) + 1, depth=1), dict(chunk=4096, depth=0),
    dict(chunk=4096, depth=5), dict(chunk=4096, depth=2, small=True),
    dict(chunk=4096, depth=1, dtype=np.int32), dict(chunk=4096.0, depth=1),
])
def test_bad_tunables_are_einval(dev: Device, ce: CopyEngine, kw: dict) -> None:
    bounce = np.empty(4096 if kw.pop("small", False) else 1 << 26, kw.pop("dtype", np.uint8))
    with pytest.raises(GdevError) as info:
        ce.htod(dev.mmu, BASE, b"x", bounce=bounce, **kw)
    assert info.value.errno == errno.EINVAL
    dev.check()


def test_closed_engine_is_ebadf() -> None:
    ce = CopyEngine("closed")
    ce.close()
    ce.close()
    with pytest.raises(GdevError) as info:
        ce.completed()
    assert info.value.errno == errno.EBADF


@pytest.mark.timeout(60)
@pytest.mark.parametrize("to_dev", [True, False])
def test_page_vanishing_mid_copy_stops_it_cleanly(to_dev: bool) -> None:
    """Validation passed, then a page is unmapped while stages are queued: the copy stops
    with that page's fault, every queued stage is drained, chunks before it are done."""
    chunk, size = 4 * PAGE_SIZE, 10 * 4 * PAGE_SIZE
    hole = 6 * chunk + PAGE_SIZE  # inside chunk 6
    with Mmu() as mmu, CopyEngine("mid") as ce:
        mem = np.zeros(size, np.uint8)
        mmu.set_aperture(0, mem)
        mmu.map(0, 0, size)
        mem[:] = 3
        host = np.full(size, 7 if to_dev else 0, np.uint8)
        bounce = np.empty(2 * chunk, np.uint8)
        errors: list[BaseException] = []

        def copy() -> None:
            try:
                if to_dev:
                    ce.htod(mmu, 0, host, chunk=chunk, depth=2, bounce=bounce)
                else:
                    ce.dtoh(mmu, host, 0, chunk=chunk, depth=2, bounce=bounce)
            except BaseException as exc:  # noqa: BLE001 - handed to the test thread
                errors.append(exc)

        ce.hold(True)
        copier = threading.Thread(target=copy)
        copier.start()
        deadline = time.monotonic() + 10
        while ce.queued() < 2 and time.monotonic() < deadline:  # validated and queued
            time.sleep(0.001)
        assert ce.queued() == 2
        mmu.unmap(hole, PAGE_SIZE)
        ce.hold(False)
        copier.join(10)
        assert not copier.is_alive() and ce.queued() == 0
        assert len(errors) == 1 and isinstance(errors[0], MmuFault)
        assert (errors[0].va, errors[0].reason) == (hole, "unmapped")
        if to_dev:  # chunks 0..5 landed; 7 was already in flight (depth 2); 8 on never ran
            assert (mem[:6 * chunk] == 7).all() and (mem[8 * chunk:] == 3).all()
        else:
            assert (host[:6 * chunk] == 3).all() and (host[7 * chunk:] == 0).all()


def test_stats_count_jobs_bytes_and_busy_time(dev: Device) -> None:
    with CopyEngine("stats") as ce:
        assert ce.stats().jobs == 0 and ce.stats().bytes == 0 and ce.stats().busy_s == 0
        bounce = np.empty(2 * MiB, np.uint8)
        ce.htod(dev.mmu, BASE, dev.model[:3 * MiB], chunk=MiB, depth=2, bounce=bounce)
        ce.wait(ce.submit_dtod(dev.mmu, BASE + 3 * MiB, dev.mmu, BASE, 12345))
        dev.model[3 * MiB:3 * MiB + 12345] = dev.model[:12345]
        stats = ce.stats()
        assert (stats.jobs, stats.bytes) == (4, 3 * MiB + 12345)
        assert stats.busy_s > 0
    dev.check()
