"""The streams of a context: CUDA's ordering domains, each its own channel.

Theory of operation
-------------------
A context has the *legacy* stream (id 0, CUDA's NULL stream, where every verb without a
stream runs) and the streams it creates (``gstream_create``, ids 1..).  Each stream is an
in-order queue like a Gdev channel: its *tail* is the ``trio.Event`` of the last operation
issued in it, and an operation starts once the events it depends on are set
(:meth:`Streams.deps`):

* its own stream's tail (in order within a stream);
* on the legacy stream, the tails of every *blocking* stream (flags 0), and on a blocking
  stream, the legacy tail: CUDA's legacy default-stream semantics.  A stream created with
  :data:`STREAM_NON_BLOCKING` orders against nothing but itself and its waits.

Operations of different streams therefore run at the same time: two launches take the
compute engine together (it interleaves the blocks of one context's grids,
``gdevd.gpu.compute``) and a copy takes a copy engine beside them.  A cross-stream wait
(``gstream_wait``: cuStreamWaitEvent) adds the awaited fence's event to the stream's
*waits*, which the next operation issued in the stream depends on too (and then clears:
its own completion covers them), so everything issued later in that stream waits.  No task
is started for a wait, and a stream holds each pending event once, so a tenant's waits
cost at most one reference per fence in flight.

Destroying a stream forgets its id at once; the work already issued in it still runs and
is still drained (:meth:`Streams.tails` keeps the tails of destroyed streams until set), so
a free after ``gstream_destroy`` never races an engine.  Every field is trio-loop state.
"""

from __future__ import annotations

import errno

import trio

from ..errors import GdevError

LEGACY = 0                  # the legacy (NULL) stream of every context
STREAM_NON_BLOCKING = 0x1   # CU_STREAM_NON_BLOCKING: no implicit order with the legacy stream
STREAM_FLAGS = STREAM_NON_BLOCKING
STREAMS_MAX = 1024          # streams a context may have at once (a tenant's bound)
STREAM_ID_MAX = (1 << 31) - 1


def _done() -> trio.Event:
    ev = trio.Event()
    ev.set()
    return ev


class Stream:
    """One stream: its id, whether it orders against the legacy stream, and its tail."""

    __slots__ = ("id", "blocking", "tail", "waits")

    def __init__(self, sid: int, blocking: bool) -> None:
        self.id, self.blocking = sid, blocking
        self.tail = _done()
        self.waits: list[trio.Event] = []   # awaited fences of other streams (gstream_wait)

    def after(self) -> list[trio.Event]:
        """The events that the stream's work so far (and its waits) completes with."""
        return [self.tail, *self.waits]

    def __repr__(self) -> str:
        return f"<Stream {self.id}{'' if self.blocking else ' non-blocking'}>"


class Streams:
    """The streams of one context (see the module docstring)."""

    def __init__(self) -> None:
        self.legacy = Stream(LEGACY, True)
        self._by_id: dict[int, Stream] = {LEGACY: self.legacy}
        self._orphans: list[trio.Event] = []     # tails of destroyed streams, not yet set
        self._next = 1

    def __len__(self) -> int:
        return len(self._by_id)

    def create(self, flags: int) -> int:
        """A new stream's id; EINVAL for unknown flags, EMFILE beyond :data:`STREAMS_MAX`."""
        if isinstance(flags, bool) or not isinstance(flags, int) or flags & ~STREAM_FLAGS:
            raise GdevError(errno.EINVAL, f"unknown stream flags {flags!r}")
        if len(self._by_id) >= STREAMS_MAX:
            raise GdevError(errno.EMFILE, f"a context has at most {STREAMS_MAX} streams")
        while self._next in self._by_id:        # ids wrap after 2**31 - 1 creations
            self._next = self._next % STREAM_ID_MAX + 1
        sid = self._next
        self._next = sid % STREAM_ID_MAX + 1
        self._by_id[sid] = Stream(sid, blocking=not flags & STREAM_NON_BLOCKING)
        return sid

    def destroy(self, sid: int) -> None:
        """Forget stream ``sid`` (its issued work still runs); EINVAL for the legacy stream."""
        st = self.get(sid)
        if st is self.legacy:
            raise GdevError(errno.EINVAL, "the legacy stream cannot be destroyed")
        del self._by_id[sid]
        if not st.tail.is_set():
            self._orphans.append(st.tail)

    def get(self, sid: int) -> Stream:
        """The stream ``sid``; EINVAL if this context has no such stream."""
        st = self._by_id.get(sid) if isinstance(sid, int) and not isinstance(sid, bool) \
            else None
        if st is None:
            raise GdevError(errno.EINVAL, f"no stream {sid!r} in this context")
        return st

    def all(self) -> list[Stream]:
        """Every live stream, the legacy one first."""
        return list(self._by_id.values())

    def deps(self, st: Stream) -> list[trio.Event]:
        """The events an operation issued now in ``st`` must wait for."""
        if st is self.legacy:
            return [ev for s in self._by_id.values() if s.blocking for ev in s.after()]
        if st.blocking:
            return [*st.after(), *self.legacy.after()]
        return st.after()

    @staticmethod
    def install(st: Stream, done: trio.Event) -> None:
        """Make ``done`` (an operation's completion, which waited for :meth:`deps`) the tail
        of ``st``; its waits are covered by it from now on."""
        st.tail, st.waits = done, []

    def tails(self) -> list[trio.Event]:
        """The unfinished tails (and waits) of every stream, destroyed ones' tails included
        (for a barrier)."""
        self._orphans = [t for t in self._orphans if not t.is_set()]
        return [t for t in (*(ev for s in self._by_id.values() for ev in s.after()),
                            *self._orphans) if not t.is_set()]

    @staticmethod
    def join(st: Stream, other: trio.Event) -> None:
        """Make ``st``'s later work wait for ``other`` too (a cross-stream wait); each
        pending event is held once (invariant: ``len(st.waits)`` <= fences in flight)."""
        st.waits = [w for w in st.waits if not w.is_set()]
        if not other.is_set() and all(w is not other for w in st.waits):
            st.waits.append(other)
