"""D6-D8, D13, D20: per-tenant limits in the runtime, driven in process as several users.

Each test takes one resource to its limit as one tenant, checks that the refusal carries its
errno and changes nothing, and that another tenant (another uid, or root for what is reserved
for it) still gets what it is owed.
"""

from __future__ import annotations

import errno
import struct
from types import SimpleNamespace

import pytest
import trio

from gdevd import runtime as rt
from gdevd.errors import GdevError
from gdevd.ioctl import backend
from gdevd.runtime import Credentials, GdevConfig, GdevSystem
from gdevd.runtime.limits import limits_text, queued_launches
from tests.memory.kernels import PTX, load_madd

MiB = 1 << 20
SMALL = dict(memory=32 * MiB, dma_memory=16 * MiB, vgpus=4, chunk_size=64 << 10,
             iowrite_limit=4096, ioread_limit=4096)


def run(body, **config):  # type: ignore[no-untyped-def]
    """Run ``body(system)`` on a small machine with ``config``; fsck after it and after the
    teardown (nothing left held, nothing charged)."""
    async def main() -> None:
        async with GdevSystem(GdevConfig(**{**SMALL, **config})) as system:
            await body(system)
            system.check_invariants()
        assert not system.handles and not system.shm.segments
        assert all(v.memory_used == 0 and v.dma_used == 0 for v in system.virtual)
        assert all(a.host_used == 0 and not any(a.host_by_vgpu.values())
                   for a in (g.swap for g in system.gpus))
    trio.run(main)


def user(uid: int) -> Credentials:
    return Credentials(uid, uid, 10_000 + uid)


async def refused(code: int, fn, *args, **kw):  # type: ignore[no-untyped-def]
    with pytest.raises(GdevError) as info:
        await fn(*args, **kw)
    assert info.value.errno == code, info.value
    return info.value


def test_contexts_per_user_and_the_root_reserve() -> None:
    async def body(s: GdevSystem) -> None:
        alice = [await rt.gopen(s, 0, user(1000)) for _ in range(3)]
        e = await refused(errno.EBUSY, rt.gopen, s, 1, user(1000))
        assert "contexts_per_user" in str(e)
        bob = [await rt.gopen(s, i % 4, user(1001)) for i in range(3)]
        assert len(s.handles) == 6
        await refused(errno.EBUSY, rt.gopen, s, 2, user(1002))  # the last 2 are root's
        assert len(s.handles) == 6                                 # nothing changed
        root = [await rt.gopen(s, 3, user(0)) for _ in range(2)]
        await refused(errno.EBUSY, rt.gopen, s, 3, user(0))       # contexts_max
        await rt.gclose(root.pop())
        await rt.gclose(alice.pop())
        await refused(errno.EBUSY, rt.gopen, s, 2, user(1002))    # 6 held: still root's
        await rt.gclose(alice.pop())
        await rt.gopen(s, 0, user(1002))                           # a freed one is reusable
        assert "contexts_per_user    3" in limits_text(s)
        for h in alice + bob + root:
            await rt.gclose(h)
        for h in list(s.handles.values()):
            await rt.gclose(h)
    run(body, contexts_max=8, contexts_reserved=2, contexts_per_user=3)


def test_pinned_memory_per_session_and_staging_for_everyone() -> None:
    async def body(s: GdevSystem) -> None:
        hog = await rt.gopen(s, 0, user(1000))
        bufs = [await rt.gmalloc_dma(hog, MiB) for _ in range(2)]
        e = await refused(errno.ENOMEM, rt.gmalloc_dma, hog, 4096)
        assert "pinned_per_session" in str(e) and s.virtual[0].dma_used == 2 * MiB
        hog2 = await rt.gopen(s, 0, user(1000))                    # the vGPU's 4 MiB share
        bufs += [await rt.gmalloc_dma(hog2, MiB) for _ in range(2)]
        await refused(errno.ENOMEM, rt.gmalloc_dma, hog2, 4096)
        victim = await rt.gopen(s, 0, user(1001))
        await refused(errno.ENOMEM, rt.gmalloc_dma, victim, 4096)  # the share is taken
        session = SimpleNamespace(handle=victim, staging=None)
        stg = await backend.staging(session)                       # but staging still works
        assert stg.size == backend.STAGING_SLOTS * backend.STAGING_CHUNK_MIN
        for h in (hog, hog2, victim):
            await rt.gclose(h)
        del bufs
    run(body, pinned_per_session=2 * MiB)


def test_queued_launches_per_context_wait_and_are_given_back() -> None:
    async def body(s: GdevSystem) -> None:
        h = await rt.gopen(s, 0, user(1000))
        code = await load_madd(h)
        n = 64
        a, b, c = [await rt.gmalloc(h, 4 * n * n) for _ in range(3)]
        k = rt.GdevKernel(code, len(PTX), "add", grid=(n // 16, n // 16, 1), block=(16, 16, 1),
                          params=struct.pack("<QQQI4x", a, b, c, n))
        most = 0
        for _ in range(12):
            await rt.glaunch(h, k)
            most = max(most, queued_launches(h))
        assert most == 3                                           # never more in flight
        await rt.gbarrier(h)
        assert queued_launches(h) == 0
        await rt.gclose(h)
    run(body, launches_queued_max=3)


def test_shm_segments_per_user() -> None:
    async def body(s: GdevSystem) -> None:
        alice = await rt.gopen(s, 0, user(1000))
        ids = [await rt.gshmget(alice, rt.GDEV_IPC_PRIVATE, 4096, 0o600) for _ in range(2)]
        e = await refused(errno.ENOSPC, rt.gshmget, alice, 77, 4096, 0o600 | rt.GDEV_IPC_CREAT)
        assert "shm_per_user" in str(e)
        assert len(s.shm.segments) == 2 and s.virtual[0].memory_used == 2 * 4096
        bob = await rt.gopen(s, 1, user(1001))
        await rt.gshmget(bob, rt.GDEV_IPC_PRIVATE, 4096, 0o600)   # another user's own
        root = await rt.gopen(s, 1, user(0))
        for _ in range(3):
            await rt.gshmget(root, rt.GDEV_IPC_PRIVATE, 4096, 0o600)
        assert ids
        for h in (alice, bob, root):
            await rt.gclose(h)
    run(body, shm_per_user=2)


def test_host_swap_is_accounted_per_vgpu() -> None:
    """A tenant that swaps without end fills only its part of host swap; another tenant
    inside its own share still allocates (before: ENOMEM once the hog took it all)."""
    async def body(s: GdevSystem) -> None:
        hog = await rt.gopen(s, 0, user(1000))
        held = []
        with pytest.raises(GdevError) as info:
            while True:
                held.append(await rt.gmalloc(hog, 2 * MiB))
        assert info.value.errno == errno.ENOMEM
        area = s.gpus[0].swap
        assert area.host_by_vgpu.get(0, 0) <= area.host_quota(s.virtual[0])
        others = [await rt.gopen(s, m, user(1000 + m)) for m in (1, 2, 3)]
        for h in others:                                           # each fills its share
            for _ in range(s.virtual[h.vgpu.minor].memory_size // (2 * MiB)):
                await rt.gmalloc(h, 2 * MiB)
        for h in [hog, *others]:
            await rt.gclose(h)
    run(body, swap_percent=10, host_swap=16 * MiB)


def test_default_shares_never_overcommit_the_device() -> None:
    """Every vGPU filling its whole share at once: no eviction, no ENOMEM, even with no host
    swap at all (before: the shares and the swap area took 110 % of the device)."""
    async def body(s: GdevSystem) -> None:
        area, gpu = s.gpus[0].swap, s.physical[0]
        assert sum(v.memory_size for v in s.virtual) + area.device_size <= gpu.memory_size
        tenants = [await rt.gopen(s, v.minor, user(1000 + v.minor)) for v in s.virtual]
        for h in tenants:
            for _ in range(h.vgpu.memory_size // MiB):
                await rt.gmalloc(h, MiB)
        assert sum(v.swap.swap_out_count for v in s.virtual) == 0
        for h in tenants:
            await rt.gclose(h)
    run(body, swap_percent=10, host_swap=0)
