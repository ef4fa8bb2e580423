"""A page-granular extent allocator: physical device memory and context address spaces.

Theory of operation
-------------------
The allocator manages ``[base, base + size)`` in pages.  Free space is a sorted list of
disjoint, coalesced ``(start, length)`` extents (``_starts`` and ``_lens`` in step, searched
with :mod:`bisect`).  ``alloc`` is first-fit: the lowest free extent large enough wins, so
low memory fills first and fragmentation stays at the top.  When no single extent is large
enough but the total free space is, ``alloc(..., split=True)`` gathers several extents in
address order (physical memory may be discontiguous; the MMU maps the pieces contiguously in
the context's address space).  Address spaces use ``split=False``.

Invariants (checked by :meth:`check`): extents sorted, disjoint, non-adjacent (coalesced),
page aligned, inside the range, and ``free_bytes`` equals their sum.  Nothing here knows who
owns a range; callers keep the extents they were given and return them with ``free``.
"""

from __future__ import annotations

import bisect
import errno

from ...errors import GdevError

Extent = tuple[int, int]              # (start, length) in bytes


class ExtentAllocator:
    """First-fit allocator of page-aligned extents inside ``[base, base + size)``."""

    def __init__(self, base: int, size: int, page: int = 4096) -> None:
        if base % page or size % page or size <= 0:
            raise GdevError(errno.EINVAL, f"allocator range not page aligned: {base:#x}+{size:#x}")
        self.base, self.size, self.page = base, size, page
        self._starts: list[int] = [base]
        self._lens: list[int] = [size]
        self.free_bytes = size

    @property
    def used_bytes(self) -> int:
        """Bytes currently handed out."""
        return self.size - self.free_bytes

    def round(self, nbytes: int) -> int:
        """``nbytes`` rounded up to a whole number of pages."""
        return -(-nbytes // self.page) * self.page

    def alloc(self, nbytes: int, *, split: bool = False) -> list[Extent]:
        """Take ``nbytes`` (rounded up to pages); return the extents, in address order.

        One extent unless ``split`` allows gathering several.  ``GdevError(ENOMEM)`` when the
        space is not there; nothing changes then.
        """
        need = self.round(nbytes)
        if need <= 0:
            raise GdevError(errno.EINVAL, f"allocation size must be > 0: {nbytes}")
        for i, length in enumerate(self._lens):
            if length >= need:
                return [self._take(i, need)]
        if not split or need > self.free_bytes:
            raise GdevError(errno.ENOMEM, f"no room for {need} bytes ({self.free_bytes} free)")
        out: list[Extent] = []
        while need:
            piece = min(need, self._lens[0])
            out.append(self._take(0, piece))
            need -= piece
        return out

    def alloc_aligned(self, nbytes: int, align: int, hint: int = 0) -> int:
        """Take one extent of ``nbytes`` (rounded up to pages) starting at a multiple of
        ``align`` (a power of two, at least a page); at ``hint`` if that range is free and
        aligned, else the lowest fit.  Its start; ``GdevError(ENOMEM)`` if none fits."""
        need = self.round(nbytes)
        if need <= 0 or align < self.page or align & (align - 1):
            raise GdevError(errno.EINVAL, f"bad aligned allocation {nbytes} / {align}")
        if hint and hint % align == 0:
            i = bisect.bisect_right(self._starts, hint) - 1
            if i >= 0 and hint + need <= self._starts[i] + self._lens[i]:
                return self._take_at(i, hint, need)
        for i, (start, length) in enumerate(zip(self._starts, self._lens, strict=True)):
            at = -(-start // align) * align
            if at + need <= start + length:
                return self._take_at(i, at, need)
        raise GdevError(errno.ENOMEM, f"no room for {need} bytes aligned to {align:#x}")

    def _take_at(self, i: int, at: int, need: int) -> int:
        """Take ``[at, at + need)`` from inside free extent ``i``."""
        start, length = self._starts[i], self._lens[i]
        if at > start:                      # keep the head free; the rest becomes extent i+1
            self._lens[i] = at - start
            self._starts.insert(i + 1, at)
            self._lens.insert(i + 1, start + length - at)
            i += 1
        self._take(i, need)
        return at

    def _take(self, i: int, need: int) -> Extent:
        start = self._starts[i]
        if self._lens[i] == need:
            del self._starts[i], self._lens[i]
        else:
            self._starts[i] += need
            self._lens[i] -= need
        self.free_bytes -= need
        return (start, need)

    def free(self, extents: list[Extent]) -> None:
        """Return extents given by :meth:`alloc`.  A double free raises ``GdevError(EINVAL)``."""
        for start, length in extents:
            self._give(start, length)

    def _give(self, start: int, length: int) -> None:
        end = start + length
        if start < self.base or end > self.base + self.size or start % self.page or length <= 0:
            raise GdevError(errno.EINVAL, f"extent outside the allocator: {start:#x}+{length:#x}")
        i = bisect.bisect_left(self._starts, start)
        prev_end = self._starts[i - 1] + self._lens[i - 1] if i else self.base
        if (i and prev_end > start) or (i < len(self._starts) and self._starts[i] < end):
            raise GdevError(errno.EINVAL, f"extent already free: {start:#x}+{length:#x}")
        merge_prev = i > 0 and prev_end == start
        merge_next = i < len(self._starts) and self._starts[i] == end
        if merge_prev and merge_next:
            self._lens[i - 1] += length + self._lens[i]
            del self._starts[i], self._lens[i]
        elif merge_prev:
            self._lens[i - 1] += length
        elif merge_next:
            self._starts[i] = start
            self._lens[i] += length
        else:
            self._starts.insert(i, start)
            self._lens.insert(i, length)
        self.free_bytes += length

    def free_extents(self) -> list[Extent]:
        """A copy of the free list (for invariant checks and /proc)."""
        return list(zip(self._starts, self._lens, strict=True))

    def check(self) -> None:
        """Assert the allocator's invariants (see the module docstring)."""
        total, prev_end = 0, None
        for start, length in self.free_extents():
            assert length > 0 and start % self.page == 0 and length % self.page == 0
            assert self.base <= start and start + length <= self.base + self.size
            assert prev_end is None or start > prev_end, "free extents overlap or not coalesced"
            prev_end = start + length
            total += length
        assert total == self.free_bytes, f"free bytes {self.free_bytes} != extents {total}"
