"""The scheduler's records: entities (contexts), per-vGPU and per-GPU resource state.

A *resource* is the compute engine (``"compute"``) or the copy engines (``"memory"``).
Each vGPU has one :class:`VRes` per resource (its wait queue, credit, utilisation window,
counters) and each physical GPU one :class:`PRes` per resource (which vGPU holds it, and the
vGPUs' round-robin order).  Under SDQ the memory resource is served by the compute records.
Every field belongs to the trio loop; times are ``trio.current_time()`` seconds.
"""

from __future__ import annotations

import collections
import dataclasses
import heapq
import itertools
from typing import TYPE_CHECKING, Any

import trio

from .priority import TaskPriority

if TYPE_CHECKING:
    from ..system import VirtualGpu

COMPUTE, MEMORY = "compute", "memory"
RESOURCES = (COMPUTE, MEMORY)


@dataclasses.dataclass
class Usage:
    """Counters of one context or one vGPU (``/proc/gdev/contexts``, ``gmonitor``)."""

    compute_s: float = 0.0      # busy time of launches (makespans)
    copy_s: float = 0.0         # busy time of engine copies (makespans)
    launches: int = 0
    copies: int = 0
    bytes_copied: int = 0
    wait_s: float = 0.0         # time spent queued for a resource
    dispatches: int = 0         # grants after waiting in a queue
    preemptions: int = 0        # running launches asked to yield the engine
    timeouts: int = 0           # launches killed by their time limit (ETIME)

    def charge(self, kind: str, busy: float) -> None:
        """Add ``busy`` seconds of ``kind`` ("compute" or "memory") time."""
        if kind == COMPUTE:
            self.compute_s += busy
        else:
            self.copy_s += busy


class Entity:
    """One context's scheduling entity (Gdev's ``gdev_sched_entity``)."""

    def __init__(self, cid: int, pid: int, vgpu: VirtualGpu | None = None,
                 daemon: bool = False) -> None:
        self.cid = cid
        self.vgpu = vgpu
        self.daemon = daemon                # opened by the daemon itself (in-daemon module)
        self.guest_task = False             # its opener runs SCHED_IDLE (guest.py)
        self.guest_override: bool | None = None
        self.prio = TaskPriority(pid)
        self.usage = Usage()
        self.instances = dict.fromkeys(RESOURCES, 0)       # grants in flight, per kind
        self.first_tick = dict.fromkeys(RESOURCES, 0.0)    # start of the current makespan
        self.held: dict[str, list[VRes]] = {k: [] for k in RESOURCES}  # per requested kind

    def __repr__(self) -> str:
        return f"<Entity cid={self.cid}>"


class Waiter:
    """An operation of a context queued for a resource; the dispatcher sets ``granted`` then
    ``event``.  A *lead* sits in the queue; a *companion* (``lead`` set) is a later
    operation of the same context (another stream's), granted along with its lead."""

    __slots__ = ("entity", "kind", "prio", "seq", "event", "granted", "since", "guest",
                 "lead", "companions")

    def __init__(self, entity: Entity, kind: str, prio: int, seq: int, since: float,
                 guest: bool = False) -> None:
        self.entity, self.kind, self.prio, self.seq = entity, kind, prio, seq
        self.event = trio.Event()
        self.granted = False
        self.since = since
        self.guest = guest
        self.lead: Waiter | None = None
        self.companions: list[Waiter] = []

    def __lt__(self, other: Waiter) -> bool:
        # invariant: every host waiter sorts before every guest waiter (guest.py)
        return (self.guest, -self.prio, self.seq) < (other.guest, -other.prio, other.seq)


class WaitQueue:
    """Waiters in priority order (hosts before guests, then higher priority first), FIFO
    among equals; O(log n) operations.

    Invariant: a context has at most one lead per kind in the queue; its other operations
    of that kind (its other streams') wait as the lead's companions, so a context with many
    streams holds one place in the queue, not one per stream (no crowding out of the other
    contexts of its vGPU)."""

    _seq = itertools.count()

    def __init__(self) -> None:
        self._heap: list[Waiter] = []
        self._gone = 0
        self._leads: dict[tuple[int, str], Waiter] = {}

    def push(self, entity: Entity, kind: str, prio: int, now: float,
             guest: bool = False) -> Waiter:
        """Queue an operation of ``entity``; return its waiter record (a companion of the
        entity's lead for ``kind``, if it has one queued)."""
        w = Waiter(entity, kind, prio, next(self._seq), now, guest)
        lead = self._leads.get((id(entity), kind))
        if lead is not None:
            w.lead = lead
            lead.companions.append(w)
            return w
        self._leads[(id(entity), kind)] = w
        heapq.heappush(self._heap, w)
        return w

    def requeue(self, group: list[Waiter]) -> None:
        """Queue ``group`` (one entity's waiters of one kind, granted nothing) again at the
        back of its priority: the first leads, the others are its companions."""
        lead = group[0]
        lead.seq, lead.lead, lead.companions = next(self._seq), None, group[1:]
        for w in lead.companions:
            w.lead = lead
        self._leads[(id(lead.entity), lead.kind)] = lead
        heapq.heappush(self._heap, lead)

    def pop(self) -> Waiter | None:
        """The most urgent live lead (with its companions), removed; None if there is none."""
        while self._heap:
            w = heapq.heappop(self._heap)
            if w.entity is not None:
                if self._leads.get((id(w.entity), w.kind)) is w:
                    del self._leads[(id(w.entity), w.kind)]
                return w
            self._gone -= 1
        return None

    def peek(self) -> Waiter | None:
        """The most urgent live waiter, left in the queue; None if there is none."""
        while self._heap and self._heap[0].entity is None:
            heapq.heappop(self._heap)
            self._gone -= 1
        return self._heap[0] if self._heap else None

    def remove(self, w: Waiter) -> None:
        """Forget a waiter that gave up (cancelled); a lead's first companion takes its
        place in the queue (same turn).  Lazy in the heap."""
        if w.lead is not None:
            w.lead.companions.remove(w)
            w.lead = None
        else:
            key = (id(w.entity), w.kind)
            if w.companions:
                nxt = w.companions[0]
                self.requeue(w.companions)
                nxt.seq, nxt.prio = w.seq, w.prio
                heapq.heapify(self._heap)
            elif self._leads.get(key) is w:
                del self._leads[key]
            self._gone += 1
        w.entity = None  # type: ignore[assignment]

    def __len__(self) -> int:
        return len(self._heap) - self._gone


class UtilWindow:
    """Busy time over the last ``window`` seconds, from non-overlapping busy intervals.

    ``add(start, end)`` records an interval (in end order); :meth:`busy` is O(1) amortised:
    intervals that left the window are dropped, the one straddling its start is clipped.
    """

    def __init__(self) -> None:
        self._spans: collections.deque[tuple[float, float]] = collections.deque()
        self._total = 0.0

    def add(self, start: float, end: float) -> None:
        """Record a busy interval."""
        if end > start:
            self._spans.append((start, end))
            self._total += end - start

    def busy(self, now: float, window: float) -> float:
        """Seconds busy within ``[now - window, now]``."""
        lo = now - window
        while self._spans and self._spans[0][1] <= lo:
            s, e = self._spans.popleft()
            self._total -= e - s
        if not self._spans:
            self._total = 0.0
            return 0.0
        s0 = self._spans[0][0]
        return max(0.0, self._total - max(0.0, lo - s0))


class VRes:
    """One vGPU's side of one resource: queue, holder, credit, utilisation, counters."""

    def __init__(self, vgpu: VirtualGpu, kind: str, now: float) -> None:
        self.vgpu, self.kind = vgpu, kind
        self.queue = WaitQueue()
        self.current: Entity | None = None
        self.credit = 0.0
        self.replenished = now
        self.created = now
        self.last_active = float("-inf")
        self.window = UtilWindow()
        self.usage = Usage()

    @property
    def share(self) -> int:
        """This vGPU's share of the resource, percent (read live from the /proc knob)."""
        return self.vgpu.compute_bandwidth if self.kind == COMPUTE else \
            self.vgpu.memory_bandwidth

    @property
    def period(self) -> float:
        """The vGPU's budget period, seconds (read live from the /proc knob)."""
        return self.vgpu.period_us / 1e6

    def utilisation(self, now: float, window: float) -> float:
        """Percent of ``window`` (or of the time since creation, if shorter) spent busy."""
        span = min(window, now - self.created)
        if span <= 0:
            return 0.0
        busy = self.window.busy(now, window)
        if self.current is not None:
            busy += now - max(self.current.first_tick[self.kind], now - window)
        return min(100.0, 100.0 * busy / span)

    def __repr__(self) -> str:
        return f"<VRes vd{self.vgpu.minor} {self.kind} credit={self.credit * 1e3:.1f}ms>"


class PRes:
    """One physical GPU's resource: the vGPU holding it and the vGPUs' order."""

    def __init__(self, index: int, kind: str) -> None:
        self.index, self.kind = index, kind
        self.order: list[VRes] = []          # the policy's round-robin list
        self.current: VRes | None = None     # whose context holds the resource
        # the token of a pending time-buffered hand-off of THIS resource (an arrival for
        # it clears the token; compute and copy engines buffer independently under MRQ)
        self.buffering: object | None = None
        # the launch running on this engine, its entity and class, and its slice (preempt.py)
        self.job: Any = None                 # the first of ``jobs``, whose timers run
        self.jobs: list[Any] = []            # every running launch of ``job_entity``
        self.job_entity: Entity | None = None
        self.job_daemon = False
        self.job_guest = False
        self.piece_end: float | None = None  # a running guest's end of piece (periodic mode)
        self.slice_start = 0.0
        self.timer: Any = None               # the job whose earliest timer is armed
        self.timer_due = 0.0                 # ... and when it fires

    def move_to_tail(self, vres: VRes) -> None:
        """Put ``vres`` last in the order (a demotion)."""
        self.order.remove(vres)
        self.order.append(vres)

    def first_waiting(self) -> VRes | None:
        """The first vGPU in order whose most urgent waiter is a host, else the first with
        a (guest) waiter; None if nobody waits."""
        first_guest = None
        for v in self.order:
            w = v.queue.peek()
            if w is None:
                continue
            if not w.guest:
                return v
            first_guest = first_guest or v
        return first_guest
