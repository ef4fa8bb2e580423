"""Randomized model tests: contexts on several vGPUs allocate, write, launch, share, swap and
read back; every byte is checked against a plain-numpy model, the invariants hold after
every step, and the accounting returns to zero once every context is closed."""

from __future__ import annotations

import errno
import random

import numpy as np
import pytest
import trio
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gdevd import runtime as rt
from gdevd.errors import GdevError
from gdevd.runtime.constants import GDEV_IPC_PRIVATE
from procfs import write_entry
from procfs.table import ENTRIES

from .conftest import MiB, read_back, run_swappy, settle_all
from .kernels import load_madd, madd

SHARE = next(e for e in ENTRIES if e.name == "memory_share")
N = 64                                   # MADD on 64 x 64 uint32 (16 KiB per matrix)
OPS = {"open": 2, "alloc": 6, "write": 3, "read": 3, "launch": 3, "free": 1, "share": 1,
       "shm": 1, "close": 0.3}


class Model:
    """What every mapping must hold: (handle, va) -> the bytes (shared arrays for shm)."""

    def __init__(self, s: rt.GdevSystem, rng: random.Random) -> None:
        self.s, self.rng = s, rng
        self.ctxs: list[rt.Handle] = []
        self.code: dict[int, int] = {}
        self.mem: dict[tuple[int, int], np.ndarray] = {}
        self.shm: list[tuple[rt.Handle, int, np.ndarray]] = []

    def objs(self, h: rt.Handle) -> list[int]:
        return [va for (cid, va) in self.mem if cid == h.cid]

    async def step(self) -> None:
        [op] = self.rng.choices(list(OPS), weights=list(OPS.values()))
        if op == "open" and len(self.ctxs) < 6 or not self.ctxs:
            h = await rt.gopen(self.s, self.rng.randrange(4))
            self.ctxs.append(h)
            self.code[h.cid] = await load_madd(h)
            return
        h = self.rng.choice(self.ctxs)
        if op == "open":
            return
        await getattr(self, "op_" + op)(h)

    async def op_alloc(self, h: rt.Handle) -> None:
        size = self.rng.choice([16 << 10, 64 << 10, MiB, 2 * MiB + 4096, 3 * MiB])
        try:
            va = await rt.gmalloc(h, size)
        except GdevError as e:
            assert e.errno == errno.ENOMEM
            return
        data = np.frombuffer(self.rng.randbytes(size), np.uint8).copy()
        await rt.gmemcpy_to_device(h, va, data, size)
        self.mem[(h.cid, va)] = data

    def _pick(self, h: rt.Handle) -> tuple[int, np.ndarray] | None:
        vas = self.objs(h)
        if not vas:
            return None
        va = self.rng.choice(vas)
        return va, self.mem[(h.cid, va)]

    async def op_write(self, h: rt.Handle) -> None:
        hit = self._pick(h)
        if hit:
            va, data = hit
            off = self.rng.randrange(len(data))
            n = self.rng.randrange(1, len(data) - off + 1)
            new = np.frombuffer(self.rng.randbytes(n), np.uint8)
            await rt.gmemcpy_to_device(h, va + off, new, n)
            data[off:off + n] = new

    async def op_read(self, h: rt.Handle) -> None:
        hit = self._pick(h)
        if hit:
            va, data = hit
            off = self.rng.randrange(len(data))
            n = self.rng.randrange(1, len(data) - off + 1)
            assert np.array_equal(await read_back(h, va + off, n), data[off:off + n])

    async def op_launch(self, h: rt.Handle) -> None:
        vas = [va for va in self.objs(h) if len(self.mem[(h.cid, va)]) >= 4 * N * N]
        if len(vas) < 3 or h.fault is not None:
            return
        a, b, c = self.rng.sample(vas, 3)
        try:
            await madd(h, self.code[h.cid], a, b, c, N)
        except GdevError as e:                  # the context holds more than its share
            assert e.errno == errno.ENOMEM
            return
        ma, mb, mc = (self.mem[(h.cid, va)][:4 * N * N].view(np.uint32) for va in (a, b, c))
        mc[:] = ma + mb

    async def op_free(self, h: rt.Handle) -> None:
        vas = [va for va in self.objs(h) if h.lookup(va).shm is None]
        if vas:
            va = self.rng.choice(vas)
            await rt.gfree(h, va)
            del self.mem[(h.cid, va)]

    async def op_share(self, h: rt.Handle) -> None:
        write_entry(SHARE, self.rng.choice(self.s.virtual), 0,
                    b"%d" % self.rng.choice([10, 25, 40]))

    async def op_shm(self, h: rt.Handle) -> None:
        other = self.rng.choice(self.ctxs)
        size = self.rng.choice([64 << 10, MiB])
        try:
            sid = await rt.gshmget(h, GDEV_IPC_PRIVATE, size, 0o600)
        except GdevError as e:
            assert e.errno == errno.ENOMEM
            return
        data = np.zeros(size, np.uint8)         # a new segment reads as zeros
        for ctx in {h.cid: h, other.cid: other}.values():
            self.mem[(ctx.cid, await rt.gshmat(ctx, sid))] = data
        await rt.gshmctl(h, sid, rt.GDEV_IPC_RMID)

    async def op_close(self, h: rt.Handle) -> None:
        await rt.gclose(h)
        self.ctxs.remove(h)
        self.mem = {k: v for k, v in self.mem.items() if k[0] != h.cid}

    async def verify_all(self) -> None:
        for (cid, va), data in self.mem.items():
            h = self.s.handles[cid]
            assert np.array_equal(await read_back(h, va, len(data)), data), (cid, hex(va))


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(20, 60))
@example(seed=0, steps=47)      # a launch fails for want of memory: the data stays readable
def test_random_operations_lose_no_byte(seed: int, steps: int) -> None:
    async def body(s: rt.GdevSystem) -> None:
        model = Model(s, random.Random(seed))
        for _ in range(steps):
            await model.step()
            await settle_all(s)
            s.check_invariants()
        await model.verify_all()
    run_swappy(body)


@pytest.mark.parametrize("swap_percent", [0, 10])
def test_concurrent_contexts_overcommit_and_all_finish(swap_percent: int) -> None:
    """Six contexts on three vGPUs at once, each holding more than a third of the device."""
    async def worker(s: rt.GdevSystem, i: int, errors: list[BaseException]) -> None:
        rng = random.Random(i)
        h = await rt.gopen(s, i % 3)
        code = await load_madd(h)
        n = 256
        mats = [np.frombuffer(rng.randbytes(4 * n * n), np.uint32) for _ in range(2)]
        vas = [await rt.gmalloc(h, 4 * n * n) for _ in range(3)]
        ballast = await rt.gmalloc(h, 5 * MiB)     # idle data that can be swapped out
        for va, m in zip(vas, mats, strict=False):
            await rt.gmemcpy_to_device(h, va, m, m.nbytes)
        for _ in range(3):
            await madd(h, code, vas[0], vas[1], vas[2], n)
            out = (await read_back(h, vas[2], 4 * n * n)).view(np.uint32)
            assert np.array_equal(out, mats[0] + mats[1])
            await trio.sleep(0)
        assert h.lookup(ballast).size == 5 * MiB
        await rt.gclose(h)

    async def body(s: rt.GdevSystem) -> None:
        for v in s.virtual[:3]:
            v.memory_share = 50                     # 3 x 50 %: overcommitted shares
        errors: list[BaseException] = []
        async with trio.open_nursery() as nursery:
            for i in range(6):
                nursery.start_soon(worker, s, i, errors)
        assert sum(v.swap.swap_out_count for v in s.virtual) > 0
    run_swappy(body, swap_percent=swap_percent, memory=32 * MiB)  # 6 x 5.75 MiB do not fit
