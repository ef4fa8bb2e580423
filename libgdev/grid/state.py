"""A node's idle state and guest execution mode: the GPU-grid paper's state machine (Fig. 3).

Pure logic, no I/O: the node feeds it samples (CPU usage of the host, the host's video memory)
and null-kernel timings, and reads back the state and the mode.

* **busy**: CPU usage above ``cpu_busy`` (30 %) *and* video memory above ``vram_busy``
  (1 MB), the paper's relaxed definition (no mouse or keyboard monitoring). Guests do not run.
* **partially idle**: not busy, and the last null kernel took ``k >= alpha`` (the GPU is in
  use by the host). Guests run in the **periodic** mode: one small piece every ``1/F``.
* **fully idle**: not busy, and ``k < alpha`` for ``full_after`` (3) null kernels in a row.
  Guests run in the **continuous** mode: pieces back to back.

Every decision is local (the scheduler is not asked); a transition is counted and time-stamped
so that transitions per minute (the paper's Fig. 6) can be published.

Hysteresis. The paper's only one is the entry into continuous mode (three null kernels below
alpha). On a machine whose emulated GPU is its CPU the null-kernel time jitters with CPU load,
so a node flips FULL -> PARTIAL -> FULL every few seconds, each flip a transition the manager
pays for. Two rules damp that without ever delaying a step towards the host:

* leaving FULL and entering BUSY stay immediate (the host comes first, as in the paper);
* a FULL stint shorter than ``full_min_s`` doubles the run of below-alpha kernels needed to
  enter FULL again (up to ``backoff_max`` x ``full_after``); a stint that lasts resets it;
* leaving BUSY needs ``idle_after`` non-busy samples in a row (one quiet sample between two
  busy ones is not idleness).
"""

from __future__ import annotations

import enum
import time
from collections import deque
from dataclasses import dataclass, field


class NodeState(enum.Enum):
    """The paper's three resource states."""

    BUSY = "busy"
    PARTIAL = "partially-idle"
    FULL = "fully-idle"


class Mode(enum.Enum):
    """How guest pieces run: not at all, one every 1/F, or back to back."""

    SUSPENDED = "suspended"
    PERIODIC = "periodic"
    CONTINUOUS = "continuous"


MODE_OF = {NodeState.BUSY: Mode.SUSPENDED, NodeState.PARTIAL: Mode.PERIODIC,
           NodeState.FULL: Mode.CONTINUOUS}


@dataclass(frozen=True)
class Thresholds:
    """The paper's parameters. ``alpha_s`` is the dedicated null-kernel time (measured by the
    node at start unless given); ``fps`` is F, the host's minimum desired frame rate."""

    cpu_busy: float = 0.30
    vram_busy: int = 1 << 20
    alpha_s: float = 0.0
    full_after: int = 3
    fps: float = 30.0
    idle_after: int = 2
    full_min_s: float = 5.0
    backoff_max: int = 8


@dataclass
class StateMachine:
    """The node's state; :meth:`sample` and :meth:`null_kernel` are its only inputs.

    Invariants: ``state`` is BUSY from a busy sample until ``idle_after`` non-busy samples in a
    row; otherwise FULL only after ``need_full`` consecutive null kernels below alpha since the
    last one at or above alpha (or since the node stopped being busy, which starts in PARTIAL);
    ``full_after <= need_full <= full_after * backoff_max``.
    """

    thresholds: Thresholds
    state: NodeState = NodeState.PARTIAL
    below_alpha: int = 0
    not_busy: int = 0
    need_full: int = 0
    transitions: int = 0
    since: float = field(default_factory=time.monotonic)
    _stamps: deque[float] = field(default_factory=lambda: deque(maxlen=4096))

    @property
    def mode(self) -> Mode:
        """The execution mode that goes with the state."""
        return MODE_OF[self.state]

    def sample(self, cpu: float, vram: int, now: float | None = None) -> NodeState:
        """Feed one CPU usage (0..1 of one core) and host video memory (bytes) sample."""
        t = self.thresholds
        if cpu > t.cpu_busy and vram > t.vram_busy:
            self.below_alpha = self.not_busy = 0
            return self._enter(NodeState.BUSY, now)
        if self.state is NodeState.BUSY:
            self.not_busy += 1
            if self.not_busy >= t.idle_after:
                return self._enter(NodeState.PARTIAL, now)
        return self.state

    def null_kernel(self, k: float, now: float | None = None) -> NodeState:
        """Feed one null-kernel time ``k`` (seconds); ignored while busy."""
        if self.state is NodeState.BUSY:
            return self.state
        if k >= self.thresholds.alpha_s:
            self.below_alpha = 0
            if self.state is NodeState.FULL:
                self._back_off(now)
            return self._enter(NodeState.PARTIAL, now)
        self.below_alpha += 1
        if self.below_alpha >= self.need_full:
            return self._enter(NodeState.FULL, now)
        return self.state

    def _back_off(self, now: float | None) -> None:
        """On leaving FULL: a short stint doubles the entry run, a long one resets it."""
        t = self.thresholds
        now = time.monotonic() if now is None else now
        if now - self.since < t.full_min_s:
            self.need_full = min(self.need_full * 2, t.full_after * t.backoff_max)
        else:
            self.need_full = t.full_after

    def screensaver(self, saver_on: bool, now: float | None = None) -> NodeState:
        """The baseline the paper compares with: fully idle only while the screensaver runs
        (no input for its timeout), busy otherwise; no partially idle state."""
        return self._enter(NodeState.FULL if saver_on else NodeState.BUSY, now)

    def per_minute(self, window_s: float = 60.0, now: float | None = None) -> float:
        """Transitions per minute over the last ``window_s`` seconds (or since creation)."""
        now = time.monotonic() if now is None else now
        span = max(min(window_s, now - self._created), 1e-9)
        recent = sum(1 for s in self._stamps if s >= now - window_s)
        return recent * 60.0 / span

    def _enter(self, state: NodeState, now: float | None) -> NodeState:
        if state is not self.state:
            now = time.monotonic() if now is None else now
            self.state, self.since = state, now
            self.transitions += 1
            self._stamps.append(now)
        return state

    def __post_init__(self) -> None:
        self._created = self.since
        self.need_full = self.need_full or self.thresholds.full_after
