"""A randomized model test of virtual memory management: two contexts of one GPU reserve,
create, map parts of allocations (several views of one allocation too), change access,
write, read, export and import, unmap and release while a hog pushes their memory out to
swap and back; every byte read is checked against plain numpy arrays (an allocation is one
array, every mapping a window on it), access-less and read-only mappings must fault, and
the invariants hold after every step."""

from __future__ import annotations

import os
import random
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gdevd import runtime as rt
from gdevd.errors import GdevError, MmuFault

from .conftest import read_back, run_swappy, settle_all

PAGE = 4096
OPS = {"reserve": 1, "create": 2, "map": 4, "access": 3, "write": 4, "read": 3,
       "unmap": 1, "release": 1, "share": 1, "hog": 2}


@dataclass(eq=False)
class View:
    """A mapping in the model: its context, address, allocation array, offset, access."""

    h: rt.Handle
    va: int
    data: np.ndarray
    offset: int
    size: int
    prot: int = 0


class Model:
    """Allocations as arrays (an import shares its exporter's), mappings as views."""

    def __init__(self, s: rt.GdevSystem, rng: random.Random) -> None:
        self.s, self.rng = s, rng
        self.ctxs: list[rt.Handle] = []
        self.allocs: dict[tuple[int, int], np.ndarray] = {}       # (cid, mem) -> bytes
        self.resv: dict[int, list[tuple[int, int]]] = {}          # cid -> reservations
        self.views: list[View] = []

    async def start(self) -> None:
        for _ in range(2):
            h = await rt.gopen(self.s, 0)
            self.ctxs.append(h)
            self.resv[h.cid] = []

    async def step(self) -> None:
        [op] = self.rng.choices(list(OPS), weights=list(OPS.values()))
        await getattr(self, "op_" + op)(self.rng.choice(self.ctxs))
        await settle_all(self.s)
        self.s.check_invariants()

    async def op_reserve(self, h: rt.Handle) -> None:
        size = self.rng.choice([4, 64, 512]) * PAGE
        self.resv[h.cid].append((await rt.gvm_reserve(h, size, PAGE << self.rng.randrange(4)),
                                 size))

    async def op_create(self, h: rt.Handle) -> None:
        size = self.rng.choice([1, 3, 16, 200, 512]) * PAGE
        try:
            mem = await rt.gvm_create(h, size)
        except GdevError:
            return                                            # the share is full: fine
        self.allocs[(h.cid, mem)] = np.zeros(size, np.uint8)

    async def op_map(self, h: rt.Handle) -> None:
        mine = [(m, a) for (cid, m), a in self.allocs.items() if cid == h.cid]
        if not mine or not self.resv[h.cid]:
            return
        mem, data = self.rng.choice(mine)
        first = self.rng.randrange(len(data) // PAGE)
        n = self.rng.randrange(1, len(data) // PAGE - first + 1)
        at = self._room(h, n * PAGE)
        if at is None:
            return
        await rt.gvm_map(h, at, n * PAGE, first * PAGE, mem)
        self.views.append(View(h, at, data, first * PAGE, n * PAGE))

    def _room(self, h: rt.Handle, size: int) -> int | None:
        """The lowest free page-aligned spot of ``size`` bytes in a reservation of ``h``."""
        for va, length in self.resv[h.cid]:
            at = va
            for v in sorted((v for v in self.views if v.h is h and
                             va <= v.va < va + length), key=lambda v: v.va):
                if v.va - at >= size:
                    break
                at = v.va + v.size
            if at + size <= va + length:
                return at
        return None

    def _view(self, h: rt.Handle) -> View | None:
        mine = [v for v in self.views if v.h is h]
        return self.rng.choice(mine) if mine else None

    async def op_access(self, h: rt.Handle) -> None:
        v = self._view(h)
        if v is not None:
            v.prot = self.rng.choice([0, 1, 3, 3, 3])
            await rt.gvm_set_access(h, v.va, v.size, v.prot)

    async def op_write(self, h: rt.Handle) -> None:
        v = self._view(h)
        if v is None:
            return
        off = self.rng.randrange(v.size)
        n = self.rng.randrange(1, v.size - off + 1)
        data = np.frombuffer(os.urandom(n), np.uint8)
        if v.prot != 3:
            with pytest.raises(MmuFault):
                await rt.gmemcpy_to_device(h, v.va + off, data, n)
            return
        await rt.gmemcpy_to_device(h, v.va + off, data, n)
        v.data[v.offset + off:v.offset + off + n] = data

    async def op_read(self, h: rt.Handle) -> None:
        v = self._view(h)
        if v is None:
            return
        if not v.prot:
            with pytest.raises(MmuFault):
                await read_back(h, v.va, v.size)
            return
        got = await read_back(h, v.va, v.size)
        assert (got == v.data[v.offset:v.offset + v.size]).all(), v

    async def op_unmap(self, h: rt.Handle) -> None:
        v = self._view(h)
        if v is not None:
            await rt.gvm_unmap(h, v.va, v.size)
            self.views.remove(v)

    async def op_release(self, h: rt.Handle) -> None:
        mine = [m for (cid, m) in self.allocs if cid == h.cid]
        if mine:
            mem = self.rng.choice(mine)
            await rt.gvm_release(h, mem)          # its views keep the memory
            del self.allocs[(h.cid, mem)]

    async def op_share(self, h: rt.Handle) -> None:
        mine = [(m, a) for (cid, m), a in self.allocs.items() if cid == h.cid]
        if not mine:
            return
        mem, data = self.rng.choice(mine)
        other = next(c for c in self.ctxs if c is not h)
        fd = await rt.gvm_export(h, mem)
        try:
            self.allocs[(other.cid, await rt.gvm_import(other, fd))] = data
        finally:
            os.close(fd)

    async def op_hog(self, h: rt.Handle) -> None:
        try:
            va = await rt.gmalloc(h, h.vgpu.memory_size - 128 * PAGE)   # pushes the rest out
        except GdevError:
            return
        await rt.gfree(h, va)

    async def verify_all(self) -> None:
        for v in self.views:
            if v.prot:
                got = await read_back(v.h, v.va, v.size)
                assert (got == v.data[v.offset:v.offset + v.size]).all(), v


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(20, 80))
def test_random_vmm_operations_lose_no_byte(seed: int, steps: int) -> None:
    async def body(s: rt.GdevSystem) -> None:
        m = Model(s, random.Random(seed))
        await m.start()
        for _ in range(steps):
            await m.step()
        await m.verify_all()
    run_swappy(body)
