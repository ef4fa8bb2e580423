"""CUDA's virtual memory management in one context: reservations, allocation handles, maps.

Theory of operation
-------------------
Three things, kept apart as CUDA keeps them (``cuMemAddressReserve``, ``cuMemCreate``,
``cuMemMap``):

* A :class:`Reservation` is a VA range of the context, taken from its VA allocator
  (aligned as asked, never overlapping another allocation's range), with nothing mapped.
* An *allocation* is a device block charged to the creating context's vGPU, with no
  address.  The context names it by an id in :attr:`VmmSpace.allocs` (an :class:`AllocRef`);
  ``gvm_create``, ``gvm_retain`` and ``gvm_import`` add a reference to the id,
  ``gvm_release`` drops one.  An id holds one reference on its block while it lives.
* A *map* puts bytes ``[offset, offset + size)`` of an allocation at a VA inside a
  reservation: a :class:`~.memory.MemObject` with ``vmm`` set to the reservation, holding one
  reference on the block like any mapping, and with no access until ``gvm_set_access``
  grants it (an access-less mapping has no page mapped: every use faults).

So releasing a mapped allocation keeps its memory until its last unmap (CUDA's rule), and
a block goes back to the device when no id, mapping or export references it.

Invariants (``invariants.py``): every ``vmm`` mapping lies inside its reservation, which
is in the context's table; a reservation's range is allocated in the VA allocator (its
mappings take no VA of their own); each live id holds exactly one block reference.
"""

from __future__ import annotations

import dataclasses
import errno
from typing import TYPE_CHECKING

from ...errors import GdevError
from .. import defaults as D

if TYPE_CHECKING:
    from .memory import DeviceBlock, MemObject


@dataclasses.dataclass(eq=False)
class Reservation:
    """A reserved VA range ``[va, va + size)`` and the mappings inside it."""

    va: int
    size: int
    maps: list[MemObject] = dataclasses.field(default_factory=list)

    def covers(self, va: int, size: int) -> bool:
        """True if ``[va, va + size)`` lies inside the reservation."""
        return self.va <= va and va + size <= self.va + self.size


@dataclasses.dataclass(eq=False)
class AllocRef:
    """An allocation id of a context: its block, the size asked for, its reference count."""

    block: DeviceBlock
    size: int
    refs: int = 1


def check_int(name: str, v: object, *, lo: int = 0, hi: int = (1 << 64) - 1) -> int:
    """``v`` as an int in ``[lo, hi]``, else ``GdevError(EINVAL)`` naming ``name``."""
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise GdevError(errno.EINVAL, f"{name} out of range: {v!r}")
    return v


def check_pages(name: str, v: object, *, positive: bool = True) -> int:
    """``v`` as a page-aligned int (> 0 if ``positive``), else ``GdevError(EINVAL)``."""
    n = check_int(name, v, lo=1 if positive else 0)
    if n % D.PAGE_SIZE:
        raise GdevError(errno.EINVAL, f"{name} {n:#x} is not a multiple of the granularity "
                                      f"({D.PAGE_SIZE:#x})")
    return n


class VmmSpace:
    """One context's reservations and allocation ids (see the module docstring)."""

    def __init__(self, cid: int) -> None:
        self.cid = cid
        self.reservations: dict[int, Reservation] = {}      # by start address
        self.allocs: dict[int, AllocRef] = {}
        self._next = 1

    def reserve(self, va: int, size: int) -> Reservation:
        """Record a reservation (its range already taken from the VA allocator)."""
        res = Reservation(va, size)
        self.reservations[va] = res
        return res

    def check_room(self) -> None:
        """ENOMEM when the context holds :data:`~.defaults.VMM_RESERVATIONS` reservations."""
        if len(self.reservations) >= D.VMM_RESERVATIONS:
            raise GdevError(errno.ENOMEM, f"context {self.cid} holds {D.VMM_RESERVATIONS} "
                                          "reservations (the per-context limit)")

    def check_maps(self) -> None:
        """ENOMEM when the context holds :data:`~.defaults.VMM_MAPPINGS` mappings (each
        costs the daemon memory and the range searches time, whatever its size)."""
        if sum(len(r.maps) for r in self.reservations.values()) >= D.VMM_MAPPINGS:
            raise GdevError(errno.ENOMEM, f"context {self.cid} holds {D.VMM_MAPPINGS} "
                                          "mappings (the per-context limit)")

    def containing(self, va: int, size: int) -> Reservation:
        """The reservation holding all of ``[va, va + size)``; EINVAL if none does."""
        for res in self.reservations.values():
            if res.covers(va, size):
                return res
        raise GdevError(errno.EINVAL, f"{va:#x}+{size:#x} is not inside one reservation of "
                                      f"context {self.cid}")

    def new_id(self, block: DeviceBlock, size: int) -> int:
        """A new allocation id holding one reference on ``block``; ENOMEM past the limit."""
        self.check_ids()
        mem = self._next
        self._next += 1
        self.allocs[mem] = AllocRef(block, size)
        block.refs += 1
        return mem

    def check_ids(self) -> None:
        """ENOMEM when the context holds :data:`~.defaults.VMM_HANDLES` allocation ids."""
        if len(self.allocs) >= D.VMM_HANDLES:
            raise GdevError(errno.ENOMEM, f"context {self.cid} holds {D.VMM_HANDLES} "
                                          "allocation handles (the per-context limit)")

    def get(self, mem: object) -> AllocRef:
        """The live allocation id ``mem``; EINVAL for anything else (unknown, released, of
        another context: ids are per context)."""
        ref = self.allocs.get(mem) if type(mem) is int else None
        if ref is None:
            raise GdevError(errno.EINVAL, f"no allocation handle {mem!r} in context {self.cid}")
        return ref

    def id_of(self, block: DeviceBlock) -> int | None:
        """The live id of ``block`` in this context, if any."""
        return next((m for m, r in self.allocs.items() if r.block is block), None)

    def mappings_in(self, va: int, size: int) -> list[MemObject]:
        """The mappings overlapping ``[va, va + size)``, in address order; EINVAL unless each
        lies wholly inside the range."""
        hit = sorted((o for r in self.reservations.values() for o in r.maps
                      if o.va < va + size and va < o.va + o.size), key=lambda o: o.va)
        for obj in hit:
            if not (va <= obj.va and obj.va + obj.size <= va + size):
                raise GdevError(errno.EINVAL, f"{va:#x}+{size:#x} covers part of the mapping "
                                              f"{obj.va:#x}+{obj.size:#x}: whole mappings only")
        return hit
