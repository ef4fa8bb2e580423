"""Gdev verbs for CUDA's virtual memory management: reserve a VA range, create a physical
allocation, map it (or a part of it) into the range, grant access (``cuMemAddressReserve``,
``cuMemCreate``, ``cuMemMap``, ``cuMemSetAccess`` and their inverses).

The objects and their invariants are :mod:`.mm.vmm`'s.  Every argument is untrusted: ids
are per context (another context's id names nothing here), and sizes, offsets and
addresses are checked against the granularity (one page), the allocation and the
reservation before anything changes.  Verbs that unmap or change access wait for the
context's earlier copies and launches first, like ``gfree``.  Sharing an allocation with
another process is :mod:`.api_vmmshare`.  Once a kernel of the context faulted, reserving,
creating and mapping fail with its sticky error (giving back still works).
"""

from __future__ import annotations

import errno
from collections.abc import Callable

import numpy as np
import trio

from ..errors import GdevError
from . import defaults as D
from .api_mem import new_block
from .handle import Handle, check_handle
from .mm.memory import PROT_RW, DeviceBlock, MemObject
from .mm.residency import map_block
from .mm.swap import map_resident, settle, unmap_resident
from .mm.vmm import Reservation, check_int, check_pages
from .teardown import release_block, settle_object, unmap_object, vmm_drop

PROT_READ = 1                   # CUDA's CU_MEM_ACCESS_FLAGS_PROT_READ, the MMU's read flag
ALIGN_MAX = 1 << 30


async def gvm_reserve(handle: Handle, size: int, align: int = 0, addr: int = 0) -> int:
    """Reserve ``size`` bytes of the context's address space; return the range's start.

    ``size`` is a positive multiple of the granularity (4 KiB); ``align`` 0 (the
    granularity) or a power of two multiple of it up to 1 GiB; ``addr`` 0 or a wished start
    (taken if free and aligned, else another is chosen, as CUDA treats it).  Errors: EBADF;
    EINVAL; ENOMEM (the address space is full, or the context holds
    ``VMM_RESERVATIONS`` reservations).
    """
    await trio.lowlevel.checkpoint()
    check_handle(handle)
    handle.check_kernel_fault()
    check_pages("size", size)
    align = check_pages("alignment", align, positive=False) or D.PAGE_SIZE
    if align > ALIGN_MAX or align & (align - 1):
        raise GdevError(errno.EINVAL, f"alignment {align:#x}: a power of two up to 1 GiB")
    check_int("address", addr)
    handle.vmm.check_room()
    va = handle.space.vas.alloc_aligned(size, align, addr)
    handle.vmm.reserve(va, size)
    return va


async def gvm_free(handle: Handle, addr: int, size: int) -> None:
    """Give back the reservation that starts at ``addr`` and has ``size`` bytes.

    Errors: EBADF; EINVAL (no such reservation, another size, or something is still mapped
    in it: unmap first).
    """
    await trio.lowlevel.checkpoint()
    check_handle(handle)
    res = handle.vmm.reservations.get(addr) if type(addr) is int else None
    if res is None or res.size != size:
        raise GdevError(errno.EINVAL, f"no reservation {addr!r}+{size!r} in context "
                                      f"{handle.cid}")
    if res.maps:
        raise GdevError(errno.EINVAL, f"reservation {addr:#x} still has {len(res.maps)} "
                                     "mapping(s): unmap them first")
    del handle.vmm.reservations[addr]
    handle.space.vas.free([(res.va, res.size)])


async def gvm_create(handle: Handle, size: int) -> int:
    """Allocate ``size`` bytes of device memory without an address; return its handle id.

    The memory is charged to the context's vGPU like ``gmalloc``'s.  Errors: EBADF; EINVAL
    (size not a positive multiple of 4 KiB); ENOMEM (beyond the share or the device with
    nothing to swap out, or ``VMM_HANDLES`` ids held).
    """
    await trio.lowlevel.checkpoint()
    check_handle(handle)
    handle.check_kernel_fault()
    check_pages("size", size)
    handle.vmm.check_ids()                  # before any memory moves
    block = await new_block(handle, size)
    try:
        handle.check_open()
        return handle.vmm.new_id(block, size)
    except BaseException:
        if block.refs == 0:
            release_block(handle.system, block)
        raise


async def gvm_release(handle: Handle, mem: int) -> None:
    """Drop one reference to allocation ``mem``; at the last one the id is gone, and the
    memory with it once no mapping shows it.  Errors: EBADF; EINVAL (no such id)."""
    await trio.lowlevel.checkpoint()
    check_handle(handle)
    ref = handle.vmm.get(mem)
    ref.refs -= 1
    if ref.refs == 0:
        del handle.vmm.allocs[mem]
        vmm_drop(handle, ref.block)


async def gvm_map(handle: Handle, addr: int, size: int, offset: int, mem: int) -> None:
    """Map bytes ``[offset, offset + size)`` of allocation ``mem`` at ``addr``, inside one
    reservation, with no access yet (``gvm_set_access`` grants it).

    Errors: EBADF; EINVAL (unaligned or out-of-range values, the range not inside one
    reservation or the part not inside the allocation, an unknown id, another physical
    GPU); EEXIST (something is mapped there already); ENOMEM (the context holds
    ``VMM_MAPPINGS`` mappings).
    """
    await trio.lowlevel.checkpoint()
    check_handle(handle)
    handle.check_kernel_fault()
    check_pages("address", addr)
    check_pages("size", size)
    check_pages("offset", offset, positive=False)
    block = handle.vmm.get(mem).block
    if offset + size > block.size:
        raise GdevError(errno.EINVAL, f"offset {offset:#x} + size {size:#x} runs past the "
                                      f"allocation ({block.size:#x} bytes)")
    if block.gpu is not handle.phys:
        raise GdevError(errno.EINVAL, f"allocation {mem} lives on another physical GPU")
    _check_free(handle, addr, size)
    handle.vmm.check_maps()
    await settle(block)
    check_handle(handle)
    res = _check_free(handle, addr, size)     # no await from here on
    handle.vmm.get(mem)
    handle.vmm.check_maps()
    obj = MemObject(addr, block, offset=offset, size=size, prot=0)
    obj.vmm = res
    map_block(handle, obj)
    res.maps.append(obj)


def _check_free(handle: Handle, addr: int, size: int) -> Reservation:
    """The reservation holding ``[addr, addr + size)`` with nothing mapped there."""
    res = handle.vmm.containing(addr, size)
    busy = [o for o in res.maps if o.va < addr + size and addr < o.va + o.size]
    if busy:
        raise GdevError(errno.EEXIST, f"{addr:#x}+{size:#x} overlaps the mapping "
                                      f"{busy[0].va:#x}+{busy[0].size:#x}")
    return res


async def gvm_unmap(handle: Handle, addr: int, size: int) -> None:
    """Unmap every mapping inside ``[addr, addr + size)`` (whole mappings only).

    Waits for the context's earlier copies and launches.  Errors: EBADF; EINVAL (nothing
    mapped there, or the range cuts a mapping).
    """
    check_handle(handle)
    check_int("address", addr)
    check_int("size", size, lo=1)
    async with handle.exclusive():
        handle.check_open()
        objs = await _settled(handle, lambda: handle.vmm.mappings_in(addr, size))
        if not objs:
            raise GdevError(errno.EINVAL, f"nothing is mapped at {addr:#x}+{size:#x}")
        for obj in objs:                                 # no await from here on
            obj.vmm.maps.remove(obj)
            unmap_object(handle, obj)


async def _settled(handle: Handle, find: Callable[[], list[MemObject]]) -> list[MemObject]:
    """``find()``'s mappings once none of their blocks is migrating; the caller does not
    await between this return and its use of them."""
    while True:
        objs = find()
        moving = [o for o in objs if getattr(o.block, "busy", None) is not None]
        if not moving:
            return objs
        await settle_object(handle, moving[0])
        handle.check_open()


async def gvm_set_access(handle: Handle, addr: int, size: int, flags: int) -> None:
    """Give the mappings of ``[addr, addr + size)`` access ``flags``: 3 read-write, 1 read
    only, 0 none (every use faults).  The range must be mapped without a hole, by whole
    mappings.  Waits for the context's earlier work.  Errors: EBADF; EINVAL."""
    check_handle(handle)
    check_int("address", addr)
    check_int("size", size, lo=1)
    if flags not in (0, PROT_READ, PROT_RW):
        raise GdevError(errno.EINVAL, f"access flags {flags!r}: 0, 1 (read) or 3 (read-write)")
    async with handle.exclusive():
        handle.check_open()
        for obj in await _settled(handle, lambda: _tiling(handle, addr, size)):
            _reprotect(handle, obj, flags)      # no await since they were found settled


def _tiling(handle: Handle, addr: int, size: int) -> list[MemObject]:
    """The mappings that cover ``[addr, addr + size)`` exactly, end to end; else EINVAL."""
    objs = handle.vmm.mappings_in(addr, size)
    end = addr
    for obj in objs:
        if obj.va != end:
            break
        end += obj.size
    if end != addr + size:
        raise GdevError(errno.EINVAL, f"{addr:#x}+{size:#x} is not wholly mapped "
                                      f"(a hole at {end:#x})")
    return objs


def _reprotect(handle: Handle, obj: MemObject, flags: int) -> None:
    """Remap ``obj``'s resident pages with access ``flags`` (its block is settled)."""
    block = obj.block
    assert isinstance(block, DeviceBlock) and block.busy is None
    pages = np.nonzero(block.pa >= 0)[0]
    unmap_resident(block, pages, [(handle, obj)])
    obj.prot = flags
    map_resident(block, pages, [(handle, obj)])


async def gvm_get_access(handle: Handle, addr: int) -> int:
    """The access flags of the mapping containing ``addr`` (0, 1 or 3).

    Errors: EBADF; EINVAL (no ``gvm_map`` mapping there)."""
    await trio.lowlevel.checkpoint()
    return _vmm_object(check_handle(handle), addr).prot


async def gvm_retain(handle: Handle, addr: int) -> int:
    """The allocation id of the mapping containing ``addr``, with one more reference (the
    id it has in this context, or a new one).  Errors: EBADF; EINVAL; ENOMEM (id limit)."""
    await trio.lowlevel.checkpoint()
    obj = _vmm_object(check_handle(handle), addr)
    block = obj.block
    assert isinstance(block, DeviceBlock)
    mem = handle.vmm.id_of(block)
    if mem is None:
        return handle.vmm.new_id(block, block.size)
    handle.vmm.allocs[mem].refs += 1
    return mem


async def gvm_size(handle: Handle, mem: int) -> int:
    """The size asked for when allocation ``mem`` was created.  Errors: EBADF; EINVAL."""
    await trio.lowlevel.checkpoint()
    return check_handle(handle).vmm.get(mem).size


def _vmm_object(handle: Handle, addr: object) -> MemObject:
    obj = handle.space.objects.find(addr) if type(addr) is int else None
    if obj is None or obj.vmm is None:
        raise GdevError(errno.EINVAL, f"no gvm_map mapping at {addr!r} in context "
                                      f"{handle.cid}")
    return obj
