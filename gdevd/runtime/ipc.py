"""CUDA IPC's records: the interprocess event table and each context's IPC holdings.

Theory of operation
-------------------
*Memory.*  An exported allocation is a segment of the shm table (:mod:`.mm.shm`), private,
mode 0600, with ``ipc`` set and a 128-bit ``secret`` (as a VMM export is, but only its IPC
handle opens it: ``gshmat`` refuses a segment with a secret, the VMM import one with ``ipc``).
The segment holds a reference on the block, each importer's mapping one more (the segment's
``attached`` list), so the memory stays charged to its owner's vGPU, once, and alive while
any importer holds it.  The export is withdrawn (the segment removed: no new opens, the
existing ones unaffected) when the owner's mapping goes: ``gfree`` or the owner's context
closing (``teardown.unmap_object``).  :class:`IpcContext.opens` counts the opens of each
mapping, since CUDA hands a context the same pointer again, reference counted.

*Events.*  An interprocess event is an :class:`IpcEvent` of the system's
:class:`IpcEventTable`: an id, a secret and ``waits``, the completion events (trio.Event,
the streams' tails) that its last record captured.  Any context holding it may record it
(the waits become a stream's unfinished work at that moment), wait for it on the host, or
order a stream of its own after it (``Streams.join``: the daemon orders the stream, no host
round trip).  It lives while any context holds a reference (:attr:`IpcContext.events`).

Invariants (``invariants.py``): every open count is >= 1 and names an IPC mapping of the
context; every event a context holds is in the table, and an event's ``refs`` is the sum of
its holders' counts.  All of it is trio-loop state.
"""

from __future__ import annotations

import dataclasses
import errno
import hmac
import secrets

import trio

from ..errors import GdevError
from . import defaults as D


@dataclasses.dataclass(eq=False)
class IpcEvent:
    """One interprocess event: its handle's id and secret, its last record's waits."""

    id: int
    secret: bytes
    pid: int                                # the creating process (the handle carries it)
    waits: list[trio.Event] = dataclasses.field(default_factory=list)
    refs: int = 0

    def pending(self) -> list[trio.Event]:
        """The unfinished part of the last record (drops the finished ones)."""
        self.waits = [w for w in self.waits if not w.is_set()]
        return self.waits


class IpcEventTable:
    """The system's interprocess events, by id (ids are never reused while one lives)."""

    def __init__(self) -> None:
        self.events: dict[int, IpcEvent] = {}
        self._next = 1

    def new(self, pid: int) -> IpcEvent:
        """A new event with a fresh 128-bit secret, no reference yet."""
        while self._next in self.events:
            self._next = self._next % 0xFFFFFFFF + 1
        ev = IpcEvent(self._next, secrets.token_bytes(16), pid)
        self._next = self._next % 0xFFFFFFFF + 1
        self.events[ev.id] = ev
        return ev

    def find(self, eid: int, secret: bytes) -> IpcEvent:
        """The live event ``eid`` if ``secret`` is its own (compared in constant time);
        ENOENT otherwise, the same for an unknown id and a wrong secret."""
        ev = self.events.get(eid)
        if ev is None or not hmac.compare_digest(ev.secret, secret):
            raise GdevError(errno.ENOENT, "no live interprocess event with this handle")
        return ev

    def drop(self, ev: IpcEvent, n: int = 1) -> None:
        """Drop ``n`` references; forget the event at the last."""
        ev.refs -= n
        if ev.refs <= 0:
            self.events.pop(ev.id, None)


class IpcContext:
    """What one context holds of CUDA IPC: its opens of exported allocations (by the
    mapping's address) and its references on interprocess events (by id)."""

    def __init__(self) -> None:
        self.opens: dict[int, int] = {}
        self.events: dict[int, int] = {}

    def check_opens(self) -> None:
        """ENOMEM when the context holds :data:`~.defaults.IPC_OPENS` opened allocations."""
        if len(self.opens) >= D.IPC_OPENS:
            raise GdevError(errno.ENOMEM, f"a context holds at most {D.IPC_OPENS} opened IPC "
                                          "allocations")

    def hold(self, table: IpcEventTable, ev: IpcEvent) -> None:
        """One more reference of this context on ``ev``; ENOMEM past
        :data:`~.defaults.IPC_EVENTS` distinct events."""
        if ev.id not in self.events and len(self.events) >= D.IPC_EVENTS:
            raise GdevError(errno.ENOMEM, f"a context holds at most {D.IPC_EVENTS} "
                                          "interprocess events")
        self.events[ev.id] = self.events.get(ev.id, 0) + 1
        ev.refs += 1

    def event(self, table: IpcEventTable, eid: object) -> IpcEvent:
        """The event ``eid`` this context holds; EINVAL for any other id (ids are only
        usable by a context that created or opened the event)."""
        if type(eid) is not int or eid not in self.events or eid not in table.events:
            raise GdevError(errno.EINVAL, f"no interprocess event {eid!r} in this context")
        return table.events[eid]

    def release(self, table: IpcEventTable, eid: int) -> None:
        """Drop one reference of this context on event ``eid`` (held)."""
        n = self.events[eid] - 1
        if n:
            self.events[eid] = n
        else:
            del self.events[eid]
        table.drop(table.events[eid])

    def release_all(self, table: IpcEventTable) -> None:
        """Drop every event reference (the context closes; its mappings go with it)."""
        for eid, n in self.events.items():
            ev = table.events.get(eid)
            if ev is not None:
                table.drop(ev, n)
        self.events.clear()
        self.opens.clear()
