"""gopen, gclose, gquery, gtune, gdevice_count: success and every error."""

from __future__ import annotations

import errno

import pytest

from gdevd import runtime as rt
from gdevd.runtime import constants as C
from gdevd.runtime import defaults as D
from gdevd.runtime.sched import Scheduler

from .conftest import MiB, raises_errno, run_system


def test_gopen_gives_distinct_contexts_and_counts_vgpus() -> None:
    async def body(s: rt.GdevSystem) -> None:
        assert await rt.gdevice_count(s) == 4
        a, b = await rt.gopen(s, 0), await rt.gopen(s, 3, rt.Credentials(1000, 1000, 42))
        assert a.cid != b.cid and a.mmu is not b.mmu
        assert b.vgpu.minor == 3 and b.cred.uid == 1000
        assert s.virtual[0].handles == {a}
        await rt.gclose(a)
        assert s.virtual[0].handles == set() and a.cid not in s.handles
    run_system(body)


def test_the_system_scheduler_is_named_for_what_it_is() -> None:
    async def body(s: rt.GdevSystem) -> None:
        assert isinstance(s.scheduler, Scheduler) and not hasattr(s, "policy")
        assert all(v.scheduler is s.scheduler for v in s.virtual)
        assert s.scheduler.policy.name == D.SCHED_POLICY    # the vGPU policy is the scheduler's
    run_system(body)


@pytest.mark.parametrize("minor", [-1, 4, 99, "0", 1.0, True, None])
def test_gopen_unknown_minor(minor: object) -> None:
    async def body(s: rt.GdevSystem) -> None:
        with raises_errno(errno.ENODEV):
            await rt.gopen(s, minor)  # type: ignore[arg-type]
    run_system(body)


def test_gopen_context_limit() -> None:
    async def body(s: rt.GdevSystem) -> None:
        [await rt.gopen(s, i % 4) for i in range(3)]
        with raises_errno(errno.EBUSY):
            await rt.gopen(s, 0)
    run_system(body, contexts_max=3)


def test_gclose_twice_and_verbs_on_closed_handle() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        va = await rt.gmalloc(h, 4096)
        await rt.gclose(h)
        with raises_errno(errno.EBADF):
            await rt.gclose(h)
        verbs = [rt.gmalloc(h, 1), rt.gfree(h, va), rt.gmalloc_dma(h, 1),
                 rt.gquery(h, C.GDEV_QUERY_CHIPSET), rt.gtune(h, 1, 1),
                 rt.gmemcpy_to_device(h, va, b"x", 1), rt.gmemcpy(h, va, va, 1),
                 rt.gmemcpy_from_device(h, bytearray(1), va, 1), rt.gsync(h, 0),
                 rt.gbarrier(h), rt.gunref(h, va), rt.gvirtget(h, b"")]
        for coro in verbs:
            with raises_errno(errno.EBADF):
                await coro
    run_system(body)


def test_gquery_values() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 1)
        q = {t: await rt.gquery(h, t) for t in C.QUERY_TYPES}
        assert q[C.GDEV_QUERY_DEVICE_MEM_SIZE] == 16 * MiB            # a quarter of 64 MiB
        assert q[C.GDEV_QUERY_DMA_MEM_SIZE] == 8 * MiB
        assert q[C.GDEV_NVIDIA_QUERY_MP_COUNT] == 7
        assert q[C.GDEV_QUERY_COMPUTE_CAPABILITY] == (7 << 16) | 5
        assert q[C.GDEV_QUERY_PCI_VENDOR] == 0x10DE
        assert q[C.GDEV_QUERY_CHIPSET] == D.CHIPSET
        assert q[C.GDEV_QUERY_DEVICE_MEM_FREE] == 16 * MiB
        await rt.gmalloc(h, 5000)                                  # two pages
        assert await rt.gquery(h, C.GDEV_QUERY_DEVICE_MEM_USED) == 8192
        assert await rt.gquery(h, C.GDEV_QUERY_DEVICE_MEM_FREE) == 16 * MiB - 8192
        await rt.gmalloc_dma(h, 1)
        assert await rt.gquery(h, C.GDEV_QUERY_DMA_MEM_FREE) == 8 * MiB - 4096
        s.virtual[1].memory_share = 50                             # a /proc write
        assert await rt.gquery(h, C.GDEV_QUERY_DEVICE_MEM_SIZE) == 32 * MiB
    run_system(body, mp_count=7)


@pytest.mark.parametrize("qtype", [0, 8, 0x101, -1, 0x2FF, "1", True, 1.0])
def test_gquery_unknown_type(qtype: object) -> None:
    async def body(s: rt.GdevSystem) -> None:
        with raises_errno(errno.EINVAL):
            await rt.gquery(await rt.gopen(s, 0), qtype)  # type: ignore[arg-type]
    run_system(body)


def test_gtune_sets_and_reallocates_bounce() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        await rt.gtune(h, C.GDEV_TUNE_MEMCPY_CHUNK_SIZE, 32 * MiB)
        await rt.gtune(h, C.GDEV_TUNE_MEMCPY_PIPELINE_COUNT, 4)
        b = h.bounce
        assert (b.chunk_size, b.pipeline_count, b.slots.size) == (32 * MiB, 4, 128 * MiB)
        await rt.gtune(h, C.GDEV_TUNE_MEMCPY_CHUNK_SIZE, 4096)
        await rt.gtune(h, C.GDEV_TUNE_MEMCPY_PIPELINE_COUNT, 1)
        assert (b.chunk_size, b.pipeline_count, b.slots.size) == (4096, 1, 4096)
    run_system(body)


@pytest.mark.parametrize("ttype,value", [
    (C.GDEV_TUNE_MEMCPY_CHUNK_SIZE, 0), (C.GDEV_TUNE_MEMCPY_CHUNK_SIZE, 2048),
    (C.GDEV_TUNE_MEMCPY_CHUNK_SIZE, 4097), (C.GDEV_TUNE_MEMCPY_CHUNK_SIZE, 32 * MiB + 4096),
    (C.GDEV_TUNE_MEMCPY_CHUNK_SIZE, -4096), (C.GDEV_TUNE_MEMCPY_PIPELINE_COUNT, 0),
    (C.GDEV_TUNE_MEMCPY_PIPELINE_COUNT, 5), (C.GDEV_TUNE_MEMCPY_PIPELINE_COUNT, 1.5),
    (0, 1), (3, 4096), (C.GDEV_TUNE_MEMCPY_PIPELINE_COUNT, True),
])
def test_gtune_out_of_range_changes_nothing(ttype: int, value: object) -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        before = (h.bounce.chunk_size, h.bounce.pipeline_count, h.bounce.slots)
        with raises_errno(errno.EINVAL):
            await rt.gtune(h, ttype, value)  # type: ignore[arg-type]
        assert (h.bounce.chunk_size, h.bounce.pipeline_count, h.bounce.slots) == before
    run_system(body)


def test_config_validation() -> None:
    for bad in [dict(gpus=0), dict(gpus=9), dict(vgpus=0), dict(memory=1000),
                dict(chunk_size=1000), dict(pipeline_count=5), dict(watchdog=0.0),
                dict(name=""), dict(memory=True)]:
        with raises_errno(errno.EINVAL):
            rt.GdevConfig(**bad).validate()  # type: ignore[arg-type]
    assert rt.parse_size("1G") == 1 << 30 and rt.parse_size("512MiB") == 512 * MiB
    assert rt.parse_size("4096") == 4096 and rt.parse_size(7) == 7
    with raises_errno(errno.EINVAL):
        rt.parse_size("lots")


def test_two_gpus_and_equal_shares() -> None:
    async def body(s: rt.GdevSystem) -> None:
        assert len(s.physical) == 2 and len(s.virtual) == 6
        assert [v.phys.index for v in s.virtual] == [0, 0, 0, 1, 1, 1]
        assert all(v.memory_share == 33 for v in s.virtual)
        h = await rt.gopen(s, 4)
        assert h.phys is s.physical[1]
        assert s.physical[1].name == "Gdev Emulated GPU"
        assert s.physical[1].compute_capability == (7, 5)
    run_system(body, gpus=2, vgpus=3)


def test_body_exceptions_leave_the_system_unwrapped() -> None:
    async def main() -> None:
        async with rt.GdevSystem(rt.GdevConfig(memory=4 * MiB)) as s:
            h = await rt.gopen(s, 0)
            await rt.gmalloc(h, 4096)
            raise KeyError("mine")
    with pytest.raises(KeyError):
        import trio
        trio.run(main)


@pytest.mark.parametrize("bad", [None, 0, "h", object()])
def test_every_verb_refuses_a_non_handle(bad: object) -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        va = await rt.gmalloc(h, 4096)
        k = rt.GdevKernel(va, 1, "k")
        calls = [rt.gclose(bad), rt.gmalloc(bad, 1), rt.gfree(bad, va), rt.gmalloc_dma(bad, 1),
                 rt.gfree_dma(bad, b""), rt.gquery(bad, C.GDEV_QUERY_CHIPSET),
                 rt.gtune(bad, 1, 1), rt.gmemcpy_to_device(bad, va, b"x", 1),
                 rt.gmemcpy_to_device_async(bad, va, b"x", 1),
                 rt.gmemcpy_from_device(bad, bytearray(1), va, 1),
                 rt.gmemcpy_from_device_async(bad, bytearray(1), va, 1),
                 rt.gmemcpy(bad, va, va, 1), rt.gmemcpy_async(bad, va, va, 1),
                 rt.glaunch(bad, k), rt.gsync(bad, 0), rt.gbarrier(bad),
                 rt.gref(bad, va, 1, h), rt.gref(h, va, 1, bad), rt.gunref(bad, va),
                 rt.gvirtget(bad, b"")]
        for call in calls:
            with raises_errno(errno.EBADF):
                await call  # type: ignore[misc]
    run_system(body)
