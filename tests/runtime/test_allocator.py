"""The extent allocator against a model: a set of free page numbers."""

from __future__ import annotations

import errno

import hypothesis.strategies as st
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from gdevd.runtime.mm.allocator import ExtentAllocator

from .conftest import raises_errno

PAGE = 4096
PAGES = 64


class AllocatorModel(RuleBasedStateMachine):
    """Random alloc/free sequences; the allocator must agree with a set of free pages."""

    def __init__(self) -> None:
        super().__init__()
        self.alloc = ExtentAllocator(0x10000, PAGES * PAGE, PAGE)
        self.free_pages = set(range(PAGES))
        self.live: list[list[tuple[int, int]]] = []

    def _pages(self, extents: list[tuple[int, int]]) -> set[int]:
        return {(s - 0x10000) // PAGE + i for s, n in extents for i in range(n // PAGE)}

    @rule(nbytes=st.integers(1, PAGES * PAGE + PAGE), split=st.booleans())
    def allocate(self, nbytes: int, split: bool) -> None:
        need = -(-nbytes // PAGE)
        runs = _runs(self.free_pages)
        fits = any(n >= need for n in runs) or (split and need <= len(self.free_pages))
        if not fits:
            with raises_errno(errno.ENOMEM):
                self.alloc.alloc(nbytes, split=split)
            return
        extents = self.alloc.alloc(nbytes, split=split)
        pages = self._pages(extents)
        assert len(pages) == need and pages <= self.free_pages
        if any(n >= need for n in runs):
            assert len(extents) == 1, "first fit must not split when one extent fits"
            assert min(pages) == _first_fit(self.free_pages, need)
        self.free_pages -= pages
        self.live.append(extents)

    @precondition(lambda self: self.live)
    @rule(i=st.integers(0, 1000))
    def release(self, i: int) -> None:
        extents = self.live.pop(i % len(self.live))
        self.alloc.free(extents)
        self.free_pages |= self._pages(extents)

    @precondition(lambda self: self.live)
    @rule()
    def double_free(self) -> None:
        extents = self.live[-1]
        self.alloc.free(extents)
        with raises_errno(errno.EINVAL):
            self.alloc.free(extents)
        self.live.pop()
        self.free_pages |= self._pages(extents)

    @invariant()
    def consistent(self) -> None:
        self.alloc.check()
        assert self.alloc.free_bytes == len(self.free_pages) * PAGE
        assert self._pages(self.alloc.free_extents()) == self.free_pages


def _runs(pages: set[int]) -> list[int]:
    """Lengths of the maximal runs of consecutive page numbers."""
    runs: list[int] = []
    prev = None
    for p in sorted(pages):
        if prev is not None and p == prev + 1:
            runs[-1] += 1
        else:
            runs.append(1)
        prev = p
    return runs


def _first_fit(pages: set[int], need: int) -> int:
    start, n, prev = None, 0, None
    for p in sorted(pages):
        if prev is None or p != prev + 1:
            start, n = p, 0
        n += 1
        prev = p
        if n >= need:
            return start  # type: ignore[return-value]
    raise AssertionError("no fit")


TestAllocator = AllocatorModel.TestCase
TestAllocator.settings = settings(max_examples=60, deadline=None, stateful_step_count=40)


def test_bad_ranges() -> None:
    with raises_errno(errno.EINVAL):
        ExtentAllocator(1, PAGE)
    a = ExtentAllocator(0, 4 * PAGE)
    with raises_errno(errno.EINVAL):
        a.alloc(0)
    with raises_errno(errno.EINVAL):
        a.free([(8 * PAGE, PAGE)])
