"""The CUDA device runtime (dynamic parallelism, CDP2): its calls as builtins of the engine.

nvcc compiles a device-side ``k<<<g, b, s, st>>>(args)`` to
``buf = cudaGetParameterBufferV2(k, g, b, s)``, stores of the arguments into ``buf`` and
``cudaLaunchDeviceV2(buf, st)``; CUDA 12+ names the calls ``__cudaCDP2<Name>``, older
toolkits ``cuda<Name>``: both are accepted (:data:`DEVRT_NAMES`).  The linker keeps each
call as ``builtin.<name>`` (linker.py) and :func:`devrt_binder` executes it lane by lane,
in lane order, against the running grid's :class:`GridState` (``env.devrt``).

Theory of operation
-------------------
* A parameter buffer is a *slot* of the launch tree's arena (:class:`Arena`): device memory
  of the launching context, charged to its share by the runtime, one slot per pending
  launch (the slots are CUDA's ``cudaLimitDevRuntimePendingLaunchCount``).  A slot is
  taken by ``GetParameterBuffer``, becomes pending at ``LaunchDevice`` and is given back
  when the child grid starts (its parameters are read then) or when the host launch ends.
  No slot left: ``NULL`` and the thread's error ``cudaErrorLaunchPendingCountExceeded``.
* A launch is recorded on the grid that makes it (:class:`GridState`); the launch tree
  (devlaunch.py) runs the children after their parent's blocks, depth first in issue order,
  tail launches last: a valid CDP2 schedule (per-stream order is issue order).
* A child deeper than :data:`MAX_DEPTH` is refused with ``cudaErrorLaunchMaxDepthExceeded``.
* Streams and events created on the device are names only: issue order already orders
  every launch after everything issued before it.
* ``cudaMalloc`` and ``cudaFree`` are the device heap's (``malloc``/``free``: ops_heap.py),
  failing with ``cudaErrorMemoryAllocation`` (no room, or no heap) and
  ``cudaErrorInvalidValue`` (an address the heap did not give).
* ``cudaMemcpyAsync`` (device to device) and ``cudaMemsetAsync`` are recorded as
  :class:`Copy` items among the grid's launches and done by the launch tree in their turn,
  after the launches issued before them (devlaunch.py).  Shared and local memory are not
  theirs to touch (``cudaErrorInvalidValue``, as CUDA documents).
* Errors are per thread (``cudaGetLastError``), kept per wave in ``env.devrt_errors``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

_PREFIXES = ("__cudaCDP2", "cuda")
_CALLS = ("GetParameterBuffer", "GetParameterBufferV2", "LaunchDevice", "LaunchDeviceV2",
          "LaunchDevice_ptsz", "LaunchDeviceV2_ptsz", "StreamCreateWithFlags",
          "StreamDestroy", "StreamWaitEvent", "StreamWaitEvent_ptsz", "EventCreateWithFlags",
          "EventRecord", "EventRecord_ptsz", "EventRecordWithFlags",
          "EventRecordWithFlags_ptsz", "EventDestroy", "GetLastError", "PeekAtLastError",
          "GetDevice", "GetDeviceCount", "DeviceGetAttribute", "DeviceGetLimit",
          "RuntimeGetVersion", "MemcpyAsync", "MemcpyAsync_ptsz", "MemsetAsync",
          "MemsetAsync_ptsz", "Malloc", "Free")
# every extern name of the device runtime the engine executes
DEVRT_NAMES = frozenset(p + c for p in _PREFIXES for c in _CALLS)

MAX_DEPTH = 24              # CUDA's nesting limit: the host's grid is depth 0
PENDING_DEFAULT = 2048      # cudaLimitDevRuntimePendingLaunchCount's default
STREAM_TAIL, STREAM_FIRE_AND_FORGET = 3, 4
NONBLOCKING, DISABLE_TIMING = 1, 2
RUNTIME_VERSION = 13000

SUCCESS, INVALID_VALUE, MEMORY_ALLOCATION, CONFIGURATION = 0, 1, 2, 9
MAX_DEPTH_EXCEEDED, PENDING_EXCEEDED = 65, 69
INVALID_FUNCTION, INVALID_DEVICE, NOT_SUPPORTED = 98, 101, 801

# cudaDeviceAttr -> value, as libcuda reports them (libgdev/csrc/cuda/device.c); the
# multiprocessor count (16) and compute capability (75, 76) are the GPU's, given with the
# arena (devlaunch.py)
ATTRIBUTES = {1: 1024, 2: 1024, 3: 1024, 4: 64, 5: 0x7FFFFFFF, 6: 65535, 7: 65535,
              8: 48 * 1024, 9: 64 * 1024, 10: 32, 12: 65536, 13: 1590000, 16: 40, 39: 1024,
              75: 7, 76: 5, 81: 64 * 1024, 82: 65536, 97: 64 * 1024}
MP_COUNT, CC_MAJOR, CC_MINOR = 16, 75, 76
LIMITS = {0: 1024, 1: 1 << 20, 2: 8 << 20, 3: 2, 4: PENDING_DEFAULT}


HEAP_NAMES = frozenset(p + c for p in _PREFIXES for c in ("Malloc", "Free"))


def calls_devrt(ins) -> bool:
    """Whether linked statement ``ins`` is a call of the device runtime."""
    op = getattr(ins, "opcode", "")
    return op.startswith("builtin.") and op[8:] in DEVRT_NAMES


def canonical(name: str) -> str:
    """The call's name without its prefix (``LaunchDeviceV2``)."""
    for p in _PREFIXES:
        if name.startswith(p):
            return name[len(p):].removesuffix("_ptsz")
    return name


@dataclass
class Child:
    """A recorded device launch: kernel, shape, shared memory, parameter slot, stream."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared: int
    slot: int
    tail: bool = False
    issuer: int = 0         # the parent's block that made it (GridState.next_child)


@dataclass
class Copy:
    """A recorded ``cudaMemcpyAsync`` (``src`` set) or ``cudaMemsetAsync`` (``value``) of
    ``count`` bytes at global address ``dst``."""

    dst: int
    count: int
    src: int | None = None
    value: int = 0
    tail: bool = False
    issuer: int = 0


class Arena:
    """Parameter-buffer slots in device memory at ``va`` (``count`` of ``size`` bytes)."""

    def __init__(self, va: int, size: int, count: int) -> None:
        self.va, self.size, self.count = va, size, count
        self.free = list(range(count - 1, -1, -1))     # a stack: low slots first
        self.taken: dict[int, tuple | None] = {}       # slot -> V2 launch config or None
        self.pending = 0                               # launched, not yet started

    def take(self, config: tuple | None) -> int:
        """A free slot's address (0 if none), remembering the V2 launch ``config``."""
        if not self.free:
            return 0
        slot = self.free.pop()
        self.taken[slot] = config
        return self.va + slot * self.size

    def slot_of(self, va: int) -> int | None:
        """The taken slot at address ``va``, or None (not a buffer of this arena)."""
        off = va - self.va
        if off < 0 or off % self.size or off // self.size >= self.count:
            return None
        return off // self.size if off // self.size in self.taken else None

    def give(self, slot: int) -> None:
        """Return ``slot`` to the free list."""
        del self.taken[slot]
        self.free.append(slot)


@dataclass
class TreeState:
    """What every grid of one host launch shares: the module, the arena, stream names."""

    module: Any
    arena: Arena | None
    kernels: dict[int, str]             # kernel address -> name
    attributes: dict[int, int] = field(default_factory=lambda: dict(ATTRIBUTES))
    next_name: int = 0x100

    def new_names(self, count: int) -> np.ndarray:
        """``count`` fresh stream or event handles (never 0, 3 or 4)."""
        first = self.next_name + 16
        self.next_name += 16 * count
        return np.arange(first, self.next_name + 1, 16, dtype=np.uint64)


@dataclass
class GridState:
    """A running grid's device-runtime state: its depth and the launches it made."""

    tree: TreeState
    depth: int
    name: str
    children: deque[Child | Copy] = field(default_factory=deque)
    tails: deque[Child | Copy] = field(default_factory=deque)
    ordered: bool = False

    def next_child(self) -> Child | Copy | None:
        """The next launch to run (called once the grid's blocks are done): children, then
        tail launches, each block's in issue order, the lowest block's first.  Blocks run in
        an order the engine chooses (in parallel on the compiling engine's threads), and
        CUDA orders no launches of different blocks; this order makes the tree the same on
        both engines, run after run."""
        if not self.ordered:
            self.children = deque(sorted(self.children, key=lambda c: c.issuer))
            self.tails = deque(sorted(self.tails, key=lambda c: c.issuer))
            self.ordered = True
        if self.children:
            return self.children.popleft()
        return self.tails.popleft() if self.tails else None

    def abandon(self) -> None:
        """Give back the slots of launches that will never run (the tree stopped)."""
        arena = self.tree.arena
        for c in (*self.children, *self.tails):
            if isinstance(c, Child) and arena is not None and c.slot in arena.taken:
                arena.give(c.slot)
                arena.pending -= 1
        self.children.clear()
        self.tails.clear()
