"""A context's device heap allocator (device ``malloc``/``free``): the C core's
``gdev_heap_*`` (csrc/heap.h: two bits per 16-byte granule in daemon memory, so nothing a
kernel writes into the heap can corrupt it) with a typed face.

The interpreter calls it lane by lane through cffi; compiled kernels call the same C code
on the same struct through :attr:`HeapAllocator.ptr` (jit/prelude.h includes heap.h), so
both engines return the same addresses for the same calls in the same order.
"""

from __future__ import annotations

import errno

from gdevd.errors import GdevError
from gdevd.gpu._core import ffi, lib
from gdevd.gpu._cutil import as_int, check

GRANULE = 16            # malloc's alignment and the allocator's unit
ALIGN_MAX = 4096        # the largest alignment __nv_aligned_device_malloc is served
# the reason of the fault of a free of an address no malloc returned (both engines)
BAD_FREE = "free of an address device malloc did not return"


class HeapAllocator:
    """The allocator over device addresses ``[base, base + size)``."""

    def __init__(self, base: int, size: int) -> None:
        as_int(base, "heap base", 0)
        as_int(size, "heap size", GRANULE)
        if base % ALIGN_MAX or size % GRANULE:
            raise GdevError(errno.EINVAL, f"heap {base:#x}+{size:#x} is not aligned")
        out = ffi.new("struct gdev_heap **")
        check(lib.gdev_heap_create(base, size, out), "gdev_heap_create")
        # freed when the last holder (the runtime's heap, a launch still running) drops it
        self.ptr = ffi.gc(out[0], lib.gdev_heap_destroy)
        self.base, self.size = base, size

    def malloc(self, size: int, align: int = GRANULE) -> int:
        """Device address of ``size`` bytes aligned to ``align``, or 0: for size 0, an
        alignment that is not a power of two up to 4096, or no room (CUDA's NULL)."""
        if not 0 < size < 1 << 64 or not 0 < align < 1 << 64:
            return 0
        return int(lib.gdev_heap_alloc(self.ptr, size, align))

    def free(self, va: int) -> bool:
        """Free the allocation at ``va`` (0 is a no-op); False if none starts there (an
        address malloc never returned, or a second free): nothing changes then."""
        if not 0 <= va < 1 << 64:
            return False
        return lib.gdev_heap_free(self.ptr, va) == 0

    @property
    def used(self) -> int:
        """Bytes allocated, in whole granules."""
        return int(lib.gdev_heap_used(self.ptr))
