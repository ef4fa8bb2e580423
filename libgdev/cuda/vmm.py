"""CUDA's virtual memory management (``cuMemAddressReserve``, ``cuMemCreate``, ``cuMemMap``,
``cuMemSetAccess`` ...), written once over the backend's ``gvm_*`` verbs and bound to
libgdev and to kcuda like the rest of the driver.

Python shapes of CUDA's structs: an allocation property is a mapping with ``type``
(``CU_MEM_ALLOCATION_TYPE_PINNED``), ``location`` (``(CU_MEM_LOCATION_TYPE_DEVICE,
ordinal)``) and ``requestedHandleTypes``; an access descriptor is ``(location, flags)``.
An allocation handle belongs to the context current when it was made (the daemon's ids are
per context), as does a reservation; every call works on the current context.  Errors map
through the one errno -> CUresult table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .core import Context, DriverCore
from .errors import CUresult, api, fail

CU_MEM_ALLOCATION_TYPE_PINNED = 1
CU_MEM_LOCATION_TYPE_DEVICE = 1
CU_MEM_HANDLE_TYPE_NONE = 0
CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1
CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0
CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 1
CU_MEM_ACCESS_FLAGS_PROT_NONE = 0
CU_MEM_ACCESS_FLAGS_PROT_READ = 1
CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3
GRANULARITY = 4096                      # the emulated GPU's page
GRANULARITY_RECOMMENDED = 2 << 20


class VmmAPI(DriverCore):
    """cuMem* virtual memory management entry points (mixed into the driver)."""

    def _location(self, ctx: Context, location: Any) -> None:
        """A device location naming the current context's device, else an error."""
        try:
            kind, dev = location
        except (TypeError, ValueError):
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"bad location {location!r}") from None
        if kind != CU_MEM_LOCATION_TYPE_DEVICE:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"location type {kind!r}: devices only")
        if dev != ctx.device:
            raise fail(CUresult.CUDA_ERROR_INVALID_DEVICE,
                       f"device {dev!r} is not the current context's ({ctx.device})")

    def _prop(self, ctx: Context, prop: Mapping[str, Any]) -> None:
        if prop.get("type", CU_MEM_ALLOCATION_TYPE_PINNED) != CU_MEM_ALLOCATION_TYPE_PINNED:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, "allocation type must be PINNED")
        if prop.get("requestedHandleTypes", 0) not in (CU_MEM_HANDLE_TYPE_NONE,
                                                       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR):
            raise fail(CUresult.CUDA_ERROR_NOT_SUPPORTED, "POSIX file descriptors only")
        self._location(ctx, prop.get("location", (CU_MEM_LOCATION_TYPE_DEVICE, ctx.device)))

    @api
    def cuMemGetAllocationGranularity(self, prop: Mapping[str, Any], option: int) -> int:
        """The page (``..._MINIMUM``) or 2 MiB (``..._RECOMMENDED``)."""
        self._prop(self._current(), prop)
        if option not in (CU_MEM_ALLOC_GRANULARITY_MINIMUM, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED):
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"granularity option {option!r}")
        return GRANULARITY if option == CU_MEM_ALLOC_GRANULARITY_MINIMUM else \
            GRANULARITY_RECOMMENDED

    @api
    def cuMemAddressReserve(self, size: int, alignment: int = 0, addr: int = 0,
                            flags: int = 0) -> int:
        """Reserve a VA range of the current context; its start."""
        ctx = self._current()
        if flags:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, "flags must be 0")
        return int(ctx.backend.gvm_reserve(ctx.handle, size, alignment, addr))

    @api
    def cuMemAddressFree(self, ptr: int, size: int) -> None:
        """Free a reservation (nothing may be mapped in it)."""
        ctx = self._current()
        ctx.backend.gvm_free(ctx.handle, ptr, size)

    @api
    def cuMemCreate(self, size: int, prop: Mapping[str, Any], flags: int = 0) -> int:
        """A physical allocation of ``size`` bytes; its handle."""
        ctx = self._current()
        self._prop(ctx, prop)
        if flags:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, "flags must be 0")
        return int(ctx.backend.gvm_create(ctx.handle, size))

    @api
    def cuMemRelease(self, handle: int) -> None:
        """Release a handle (the memory lives on while mapped)."""
        ctx = self._current()
        ctx.backend.gvm_release(ctx.handle, handle)

    @api
    def cuMemMap(self, ptr: int, size: int, offset: int, handle: int, flags: int = 0) -> None:
        """Map ``handle``'s bytes from ``offset`` at ``ptr`` (inside a reservation)."""
        ctx = self._current()
        if flags:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, "flags must be 0")
        ctx.backend.gvm_map(ctx.handle, ptr, size, offset, handle)

    @api
    def cuMemUnmap(self, ptr: int, size: int) -> None:
        """Unmap the whole mappings of ``[ptr, ptr + size)`` (earlier work completes first)."""
        ctx = self._current()
        ctx.backend.gvm_unmap(ctx.handle, ptr, size)

    @api
    def cuMemSetAccess(self, ptr: int, size: int, desc: Iterable[tuple[Any, int]]) -> None:
        """Set access for the current device (descriptors of other devices are refused)."""
        ctx = self._current()
        items = list(desc)
        if not items:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, "no access descriptor")
        for location, flags in items:
            self._location(ctx, location)
            ctx.backend.gvm_set_access(ctx.handle, ptr, size, flags)

    @api
    def cuMemGetAccess(self, location: Any, ptr: int) -> int:
        """The access flags of the mapping at ``ptr`` for ``location``."""
        ctx = self._current()
        self._location(ctx, location)
        return int(ctx.backend.gvm_get_access(ctx.handle, ptr))

    @api
    def cuMemRetainAllocationHandle(self, ptr: int) -> int:
        """The handle of the allocation mapped at ``ptr``, retained once more."""
        ctx = self._current()
        return int(ctx.backend.gvm_retain(ctx.handle, ptr))

    @api
    def cuMemGetAllocationPropertiesFromHandle(self, handle: int) -> dict[str, Any]:
        """The properties of ``handle``'s allocation (and its size, an extension)."""
        ctx = self._current()
        size = int(ctx.backend.gvm_size(ctx.handle, handle))
        return {"type": CU_MEM_ALLOCATION_TYPE_PINNED, "size": size,
                "location": (CU_MEM_LOCATION_TYPE_DEVICE, ctx.device),
                "requestedHandleTypes": CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR}

    @api
    def cuMemExportToShareableHandle(self, handle: int, handle_type: int,
                                     flags: int = 0) -> int:
        """A file descriptor sharing ``handle``'s allocation (the caller closes it)."""
        ctx = self._current()
        _posix_fd(handle_type, flags)
        return int(ctx.backend.gvm_export(ctx.handle, handle))

    @api
    def cuMemImportFromShareableHandle(self, fd: int, handle_type: int) -> int:
        """The allocation shared by ``fd``, as a handle of the current context."""
        ctx = self._current()
        _posix_fd(handle_type, 0)
        return int(ctx.backend.gvm_import(ctx.handle, fd))


def _posix_fd(handle_type: int, flags: int) -> None:
    if handle_type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR or flags:
        raise fail(CUresult.CUDA_ERROR_NOT_SUPPORTED,
                   f"handle type {handle_type!r}: POSIX file descriptors only, flags 0")
