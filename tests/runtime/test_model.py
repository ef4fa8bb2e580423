"""The Gdev API against a plain-Python model (hypothesis state machine).

Contexts, device objects, pinned buffers and references are driven at random through the
synchronous facade; the model keeps every object's bytes.  After each step the system's
invariant checker runs and every vGPU's charge must equal the model's.
"""

from __future__ import annotations

import errno

import hypothesis.strategies as st
import numpy as np
from hypothesis import settings
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    multiple,
    rule,
)

from gdevd import gdev
from gdevd.errors import GdevError

from .conftest import MiB

PAGE = 4096


class Obj:
    """A model object: its owner's handle, VA, size and bytes (shared with its references)."""

    def __init__(self, h: gdev.Handle, va: int, data: bytearray, pinned: object = None,
                 ref_of: Obj | None = None) -> None:
        self.h, self.va, self.data, self.pinned, self.ref_of = h, va, data, pinned, ref_of
        self.dead = False


class ApiModel(RuleBasedStateMachine):
    handles = Bundle("handles")
    objects = Bundle("objects")

    def __init__(self) -> None:
        super().__init__()
        self.system = gdev.boot(gdev.GdevConfig(memory=16 * MiB, dma_memory=8 * MiB,
                                                vgpus=2, chunk_size=16 << 10,
                                                iowrite_limit=PAGE, ioread_limit=PAGE))
        self.charged = {0: 0, 1: 0}             # device bytes per vGPU in the model
        self.blocks: dict[int, list[Obj]] = {}  # id(data) -> live mappings of those bytes

    def teardown(self) -> None:
        gdev.shutdown()

    @rule(target=handles, minor=st.integers(0, 1))
    def open(self, minor: int) -> gdev.Handle:
        return gdev.gopen(minor)

    @rule(h=consumes(handles))
    def close(self, h: gdev.Handle) -> None:
        if h.handle.closed:
            return
        gdev.gclose(h)
        for live in list(self.blocks.values()):
            for o in [o for o in live if o.h is h]:
                self._drop(o)

    @rule(target=objects, h=handles, pinned=st.booleans(),
          size=st.one_of(st.integers(1, 64 << 10), st.integers(1, 3 * MiB)))
    def alloc(self, h: gdev.Handle, size: int, pinned: bool) -> object:
        if h.handle.closed:
            return multiple()
        rounded = -(-size // PAGE) * PAGE
        vgpu = h.handle.vgpu
        try:
            if pinned:
                buf = gdev.gmalloc_dma(h, size)
                obj = Obj(h, buf.va, bytearray(rounded), pinned=buf)
            else:
                obj = Obj(h, gdev.gmalloc(h, size), bytearray(rounded))
        except GdevError as e:
            assert e.errno == errno.ENOMEM
            share = vgpu.dma_memory_size - vgpu.dma_used if pinned else \
                vgpu.memory_size - self.charged[vgpu.minor]
            assert rounded > share or not pinned and rounded > self._device_free()
            return multiple()
        if not pinned:
            self.charged[vgpu.minor] += rounded
        self.blocks[id(obj.data)] = [obj]
        return obj

    def _device_free(self) -> int:
        return self.system.gpus[0].allocator.free_bytes

    @rule(obj=consumes(objects))
    def free(self, obj: Obj | None) -> None:
        if obj is None or obj.dead or obj.h.handle.closed:
            return
        if obj.ref_of is not None:
            gdev.gunref(obj.h, obj.va)
        elif obj.pinned is not None:
            assert gdev.gfree_dma(obj.h, obj.pinned) == len(obj.data)
        else:
            assert gdev.gfree(obj.h, obj.va) == len(obj.data)
        self._drop(obj)
        try:
            gdev.gfree(obj.h, obj.va)
            raise AssertionError("double free succeeded")
        except GdevError as e:
            assert e.errno == errno.ENOENT

    def _drop(self, obj: Obj) -> None:
        obj.dead = True
        live = self.blocks[id(obj.data)]
        live.remove(obj)
        if not live:
            del self.blocks[id(obj.data)]
            owner = obj.ref_of or obj
            if owner.pinned is None:
                self.charged[owner.h.handle.vgpu.minor] -= len(obj.data)

    def _usable(self, obj: Obj | None) -> bool:
        return obj is not None and not obj.dead and not obj.h.handle.closed

    @rule(obj=objects, data=st.data())
    def write(self, obj: Obj | None, data: st.DataObject) -> None:
        if not self._usable(obj):
            return
        assert obj is not None
        off = data.draw(st.integers(0, len(obj.data) - 1))
        n = data.draw(st.integers(1, len(obj.data) - off))
        payload = np.random.default_rng(off + n).integers(0, 256, n, dtype=np.uint8)
        gdev.gmemcpy_to_device(obj.h, obj.va + off, payload, n)
        obj.data[off:off + n] = payload.tobytes()

    @rule(dst=objects, src=objects, data=st.data())
    def device_copy(self, dst: Obj | None, src: Obj | None, data: st.DataObject) -> None:
        if not (self._usable(dst) and self._usable(src)) or dst.h is not src.h:  # type: ignore
            return
        assert dst is not None and src is not None
        n = data.draw(st.integers(1, min(len(dst.data), len(src.data))))
        gdev.gmemcpy(dst.h, dst.va, src.va, n)
        dst.data[:n] = bytes(src.data[:n])

    @rule(target=objects, obj=objects, slave=handles)
    def ref(self, obj: Obj | None, slave: gdev.Handle) -> object:
        if not self._usable(obj) or slave.handle.closed:
            return multiple()
        assert obj is not None
        va = gdev.gref(obj.h, obj.va, len(obj.data), slave)
        ref = Obj(slave, va, obj.data, pinned=obj.pinned, ref_of=obj.ref_of or obj)
        self.blocks[id(obj.data)].append(ref)
        return ref

    @rule(obj=objects)
    def read_back(self, obj: Obj | None) -> None:
        if not self._usable(obj):
            return
        assert obj is not None
        out = np.empty(len(obj.data), np.uint8)
        gdev.gmemcpy_from_device(obj.h, out, obj.va, len(obj.data))
        assert out.tobytes() == bytes(obj.data)

    @invariant()
    def consistent(self) -> None:
        gdev.check_invariants()
        for v in self.system.virtual:
            assert v.memory_used == self.charged[v.minor]


TestApiModel = ApiModel.TestCase
TestApiModel.settings = settings(max_examples=80, stateful_step_count=40, deadline=None)
