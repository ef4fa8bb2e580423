"""The C page table held against a plain-Python model (hypothesis state machine).

The model is a dict from virtual page number to (aperture, physical page, flags) and a
bytearray per aperture.  Virtual pages are drawn from three windows: low pages, both sides
of a level-2 table boundary, and the top of the 40-bit space, so ranges cross pages, tables
and the end of the address space.
"""

from __future__ import annotations

import errno

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import settings
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from gdevd.errors import GdevError, MmuFault
from gdevd.gpu.mmu import ACC_READ, ACC_WRITE, PAGE_SIZE, VA_BITS, Mmu
from gdevd.gpu.vram import Vram

TOP = 1 << (VA_BITS - 12)
VPNS = list(range(0, 12)) + list(range(16380, 16388)) + list(range(TOP - 6, TOP))
AP_PAGES = {0: 48, 1: 16}
WIDTHS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}

vpns = st.sampled_from(VPNS)
accesses = st.sampled_from([ACC_READ, ACC_WRITE, ACC_READ | ACC_WRITE])


class Model:
    """What a page table must do, in the plainest Python."""

    def __init__(self) -> None:
        self.pages: dict[int, tuple[int, int, int]] = {}
        self.mem = {ap: bytearray(n * PAGE_SIZE) for ap, n in AP_PAGES.items()}

    def fault(self, va: int, access: int) -> str | None:
        """None if va may be accessed, else the MmuFault reason."""
        pte = self.pages.get(va // PAGE_SIZE) if va < 1 << VA_BITS else None
        if pte is None:
            return "unmapped"
        return None if pte[2] & access == access else "protection"

    def first_fault(self, va: int, size: int, access: int) -> tuple[int, str] | None:
        """(first bad byte, reason) of a direct access, or None (zero size never faults)."""
        page = va - va % PAGE_SIZE
        while size and page < va + size:
            reason = self.fault(page, access)
            if reason:
                return max(page, va), reason
            page += PAGE_SIZE
        return None

    def where(self, va: int) -> tuple[int, int]:
        ap, ppn, _ = self.pages[va // PAGE_SIZE]
        return ap, ppn * PAGE_SIZE + va % PAGE_SIZE


class MmuMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.vram = Vram(AP_PAGES[0] * PAGE_SIZE)
        self.pinned = np.zeros(AP_PAGES[1] * PAGE_SIZE + 100, np.uint8)  # tail ignored
        self.mmu = Mmu()
        self.mmu.set_aperture(0, self.vram.buffer)
        self.mmu.set_aperture(1, self.pinned)
        self.model = Model()
        rng = np.random.default_rng(len(MmuMachine.__name__))
        for ap in AP_PAGES:  # nonzero memory, so a load from the wrong place shows
            fill = rng.integers(0, 256, AP_PAGES[ap] * PAGE_SIZE, np.uint8)
            self.real_mem(ap)[:] = fill
            self.model.mem[ap][:] = fill.tobytes()

    def teardown(self) -> None:
        self.mmu.close()
        self.vram.close()

    def draw_vpn(self, data: st.DataObject) -> int:
        """A virtual page number, seven times in eight a mapped one if there is any."""
        mapped = sorted(self.model.pages)
        if mapped and data.draw(st.integers(0, 7)):
            return data.draw(st.sampled_from(mapped))
        return data.draw(vpns)

    def real_mem(self, ap: int) -> np.ndarray:
        return self.vram.buffer if ap == 0 else self.pinned[: AP_PAGES[1] * PAGE_SIZE]

    def expect(self, exc: type[GdevError], err: int, fn, *args) -> GdevError:
        with pytest.raises(exc) as info:
            fn(*args)
        assert info.value.errno == err
        return info.value

    @initialize(flags=st.lists(st.sampled_from([1, 3, 3, 3, 2]), min_size=8, max_size=8))
    def premap(self, flags: list[int]) -> None:
        """Start with pages mapped across a table boundary, scattered over both apertures."""
        for i, vpn in enumerate(range(16382, 16390) if flags[0] != 2 else range(4, 12)):
            ap, ppn = i % 2, (3 + 5 * i) % 16
            self.mmu.map(vpn * PAGE_SIZE, ppn * PAGE_SIZE, PAGE_SIZE, aperture=ap,
                         flags=flags[i])
            self.model.pages[vpn] = (ap, ppn, flags[i])

    # -- map / unmap --------------------------------------------------------------------

    @rule(vpn=vpns, n=st.integers(1, 4), ap=st.sampled_from([0, 1, 2]),
          ppn=st.integers(0, 50), flags=st.integers(0, 4))
    def map(self, vpn: int, n: int, ap: int, ppn: int, flags: int) -> None:
        va, pa, size = vpn * PAGE_SIZE, ppn * PAGE_SIZE, n * PAGE_SIZE
        if vpn + n > TOP:
            err = errno.ERANGE
        elif ap not in AP_PAGES or flags not in (1, 2, 3):
            err = errno.EINVAL
        elif ppn + n > AP_PAGES[ap]:
            err = errno.ERANGE
        elif any(vpn + i in self.model.pages for i in range(n)):
            err = errno.EEXIST
        else:
            self.mmu.map(va, pa, size, aperture=ap, flags=flags)
            for i in range(n):
                self.model.pages[vpn + i] = (ap, ppn + i, flags)
            return
        self.expect(GdevError, err, lambda: self.mmu.map(va, pa, size, aperture=ap, flags=flags))

    @rule(va=st.integers(0, 1 << 20), size=st.integers(0, 3 * PAGE_SIZE))
    def map_misaligned(self, va: int, size: int) -> None:
        if va % PAGE_SIZE == 0 and size % PAGE_SIZE == 0 and size:
            return
        self.expect(GdevError, errno.EINVAL, self.mmu.map, va, 0, size)
        self.expect(GdevError, errno.EINVAL, self.mmu.unmap, va, size)

    @rule(vpn=vpns, n=st.integers(1, 4))
    def unmap(self, vpn: int, n: int) -> None:
        va, size = vpn * PAGE_SIZE, n * PAGE_SIZE
        if vpn + n > TOP:
            self.expect(GdevError, errno.ERANGE, self.mmu.unmap, va, size)
        elif not all(vpn + i in self.model.pages for i in range(n)):
            self.expect(GdevError, errno.ENOENT, self.mmu.unmap, va, size)
        else:
            self.mmu.unmap(va, size)
            for i in range(n):
                del self.model.pages[vpn + i]

    @precondition(lambda self: self.model.pages)
    @rule(data=st.data())
    def unmap_one(self, data: st.DataObject) -> None:
        vpn = data.draw(st.sampled_from(sorted(self.model.pages)))
        self.mmu.unmap(vpn * PAGE_SIZE, PAGE_SIZE)
        del self.model.pages[vpn]

    # -- translation --------------------------------------------------------------------

    @rule(data=st.data(), off=st.integers(0, PAGE_SIZE - 1), access=accesses)
    def translate(self, data: st.DataObject, off: int, access: int) -> None:
        va = self.draw_vpn(data) * PAGE_SIZE + off
        reason = self.model.fault(va, access)
        if reason:
            fault = self.expect(MmuFault, errno.EFAULT, self.mmu.translate, va, access)
            assert (fault.va, fault.reason) == (va, reason)
        else:
            assert self.mmu.translate(va, access) == self.model.where(va)

    @rule(data=st.data(), access=accesses)
    def translate_v(self, data: st.DataObject, access: int) -> None:
        n = data.draw(st.integers(0, 12))
        offs = data.draw(st.lists(st.integers(0, PAGE_SIZE - 1), min_size=n, max_size=n))
        arr = np.array([self.draw_vpn(data) * PAGE_SIZE + o for o in offs], np.uint64)
        bad = [i for i, va in enumerate(arr.tolist()) if self.model.fault(va, access)]
        if bad:
            fault = self.expect(MmuFault, errno.EFAULT, self.mmu.translate_v, arr, access)
            assert fault.index == bad[0] and fault.va == int(arr[bad[0]])
            assert fault.reason == self.model.fault(fault.va, access)
        else:
            want = [(ap << 48) | pa for ap, pa in map(self.model.where, arr.tolist())]
            assert self.mmu.translate_v(arr, access).tolist() == want

    # -- the direct path ----------------------------------------------------------------

    @rule(draw=st.data(), off=st.integers(0, PAGE_SIZE - 1),
          data=st.binary(max_size=3 * PAGE_SIZE))
    def write(self, draw: st.DataObject, off: int, data: bytes) -> None:
        va = self.draw_vpn(draw) * PAGE_SIZE + off
        bad = self.model.first_fault(va, len(data), ACC_WRITE)
        if bad:
            fault = self.expect(MmuFault, errno.EFAULT, self.mmu.write, va, data)
            assert (fault.va, fault.reason) == bad
            return
        self.mmu.write(va, data)
        for i, byte in enumerate(data):
            ap, pa = self.model.where(va + i)
            self.model.mem[ap][pa] = byte

    @rule(data=st.data(), off=st.integers(0, PAGE_SIZE - 1), size=st.integers(0, 3 * PAGE_SIZE))
    def read(self, data: st.DataObject, off: int, size: int) -> None:
        va = self.draw_vpn(data) * PAGE_SIZE + off
        bad = self.model.first_fault(va, size, ACC_READ)
        if bad:
            fault = self.expect(MmuFault, errno.EFAULT, self.mmu.read, va, size)
            assert (fault.va, fault.reason) == bad
            return
        want = bytes(self.model.mem[ap][pa] for ap, pa in map(self.model.where,
                                                               range(va, va + size)))
        assert self.mmu.read(va, size) == want

    # -- vector loads and stores --------------------------------------------------------

    def vector(self, data: st.DataObject, width: int) -> np.ndarray:
        n = data.draw(st.integers(0, 6))
        vas = []
        for _ in range(n):  # mostly aligned, sometimes off by one byte
            off = data.draw(st.integers(0, PAGE_SIZE // width - 1)) * width
            mis = width > 1 and data.draw(st.integers(0, 7)) == 0
            vas.append(self.draw_vpn(data) * PAGE_SIZE + off + mis)
        return np.array(vas, np.uint64)

    def vector_fault(self, vas: np.ndarray, width: int, access: int) -> tuple[int, str] | None:
        for i, va in enumerate(vas.tolist()):
            if va % width:
                return i, "misaligned"
            reason = self.model.fault(va, access)
            if reason:
                return i, reason
        return None

    @rule(data=st.data(), width=st.sampled_from([1, 2, 4, 8, 16]))
    def load_v(self, data: st.DataObject, width: int) -> None:
        vas = self.vector(data, width)
        bad = self.vector_fault(vas, width, ACC_READ)
        if bad:
            fault = self.expect(MmuFault, errno.EFAULT, self.mmu.load_v, vas, width)
            assert (fault.index, fault.reason) == bad
            return
        got = self.mmu.load_v(vas, width)
        for i, va in enumerate(vas.tolist()):
            ap, pa = self.model.where(va)
            assert got[i].tobytes() == bytes(self.model.mem[ap][pa:pa + width])

    @rule(data=st.data(), width=st.sampled_from([1, 2, 4, 8, 16]))
    def store_v(self, data: st.DataObject, width: int) -> None:
        vas = self.vector(data, width)
        raw = data.draw(st.binary(min_size=len(vas) * width, max_size=len(vas) * width))
        values = np.frombuffer(raw, WIDTHS.get(width, np.uint64)).reshape(
            (len(vas), 2) if width == 16 else (len(vas),))
        bad = self.vector_fault(vas, width, ACC_WRITE)
        if bad:
            self.expect(MmuFault, errno.EFAULT, self.mmu.store_v, vas, values)
        else:
            self.mmu.store_v(vas, values)
        done = bad[0] if bad else len(vas)  # elements before the fault took effect
        for i, va in enumerate(vas.tolist()[:done]):
            ap, pa = self.model.where(va)
            self.model.mem[ap][pa:pa + width] = raw[i * width:(i + 1) * width]

    # -- invariants ---------------------------------------------------------------------

    @invariant()
    def same_pages(self) -> None:
        assert self.mmu.mapped_pages() == len(self.model.pages)

    @invariant()
    def same_memory(self) -> None:
        for ap in AP_PAGES:
            assert self.real_mem(ap).tobytes() == bytes(self.model.mem[ap])


MmuMachine.TestCase.settings = settings(max_examples=80, stateful_step_count=40, deadline=None)
TestMmuModel = MmuMachine.TestCase
