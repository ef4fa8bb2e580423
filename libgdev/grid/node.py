"""One grid node: a guest CUDA context on the node's gdevd and the paper's cooperative
multitasking around it.

A monitor thread samples the host (CPU, video memory) every ``sample_s`` and, when no guest
piece ran meanwhile, times a null kernel, so the state is kept current between tasks. Before
each guest piece :meth:`Node.turn` times a null kernel (the paper's test) and waits for the
piece's turn: none while busy, one piece every 1/F when partially idle, at once when fully
idle. Every state change is decided here and reported through ``on_change``.

With ``saver_file`` the node is instead the screensaver-like baseline the paper compares
with: fully idle (continuous) only after ``saver_s`` seconds without host input, read from the
host's activity file, and busy otherwise.

With ``frames_file`` (budget.py) the monitor also reads the host's frame counter: the node
publishes the frames its host kept while guests ran, and its piece budget P follows them
(halved while the host misses frames); every piece's outcome carries P and the piece's time,
from which the client sizes the node's next piece (sizing.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from . import context
from .budget import Budget, FrameMeter, kept, read_frames
from .pieces import Piece, run_piece
from .probe import HostProbe, engine_seconds
from .state import Mode, NodeState, StateMachine, Thresholds

ALPHA_RUNS = 21
ALPHA_MARGIN = 1.5  # alpha: the 90th percentile of dedicated runs x margin (the jitter of an
#                    emulated GPU on a shared CPU; a real GPU's null kernel is steadier)


CPU_WINDOW_SAMPLES = 3  # CPU usage is averaged over the last three sampling periods
DRAWING_S = 0.5  # the host draws frames when its frame counter moved this recently


class HostReturned(Exception):
    """The host kept this node busy past the wait a piece may spend for its turn."""


class Node:
    """The guest side of one gdevd: context, modules, state machine and statistics.

    Invariant: the GPU context is used under ``_gpu`` only (tasks and the monitor's null
    kernels never interleave); ``machine`` is changed under ``_lock`` only.
    """

    def __init__(self, mount: str, name: str = "", minor: int = 0,
                 thresholds: Thresholds | None = None, cpu_source: str = "tenants",
                 sample_s: float = 0.2, wait_s: float = 1.0,
                 on_change: Callable[[dict[str, Any]], None] | None = None,
                 saver_file: str | None = None, saver_s: float = 0.0,
                 frames_file: str | None = None, piece_share: float = 0.3) -> None:
        self.mount, self.name, self.minor = mount, name or os.uname().nodename, minor
        self.wait_s, self.sample_s, self.on_change = wait_s, sample_s, on_change
        self.probe = HostProbe(mount, cpu_source, window_s=CPU_WINDOW_SAMPLES * sample_s)
        self.saver_file, self.saver_s = saver_file, saver_s
        self._thresholds = thresholds or Thresholds()
        self.frames_file, self.frames = frames_file, FrameMeter()
        self.budget = Budget(self._thresholds.fps, piece_share)
        self.piece_s = 0.0  # the last pieces' time, smoothed (EWMA 1/4)
        self._lock, self._gpu = threading.Lock(), threading.RLock()
        self._stop = threading.Event()
        self.stats = {"pieces": 0, "threads": 0, "gpu_s": 0.0, "interrupted": 0}
        self._in_state = {s.value: 0.0 for s in NodeState}
        self._next_slot = 0.0
        self._last_piece = 0.0
        self.last_k = 0.0
        self.cpu, self.vram = 0.0, 0

    def start(self) -> None:
        """Open the guest context, measure alpha if not given, start the monitor."""
        self.cuda, self.ctx = context.open_guest(self.mount, self.minor)
        self._modules: dict[str, Any] = {}
        self._null = self._function(context.null_kernel())
        with context.current(self.cuda, self.ctx):
            self._out = self.cuda.cuMemAlloc(4)
        self._time_null()  # the first launch loads the module: not a dedicated time
        t = self._thresholds
        if t.alpha_s <= 0:
            runs = sorted(self._time_null() or 0.0 for _ in range(ALPHA_RUNS))
            t = dataclasses.replace(t, alpha_s=runs[len(runs) * 9 // 10] * ALPHA_MARGIN)
        self.machine = StateMachine(t)
        self.guest_class = context.is_guest(self.mount)
        self.started = time.monotonic()
        self._thread = threading.Thread(target=self._monitor, name="gdev-grid-monitor",
                                        daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop the monitor and destroy the guest context (frees everything it held)."""
        self._stop.set()
        if hasattr(self, "_thread"):
            self._thread.join(5)
        if not hasattr(self, "ctx"):
            return
        with self._gpu:
            self.cuda.cuCtxDestroy(self.ctx)

    def run(self, piece: Piece) -> tuple[list[Any], float]:
        """Run one kernel piece in its turn; its output arrays and the seconds it took (its
        staging, launch and copies back). Raises HostReturned."""
        self.turn()
        function = self._function(piece.kernel)
        with self._gpu, context.current(self.cuda, self.ctx), self._timer() as took:
            outs = run_piece(self.cuda, function, piece)
        return outs, self._account(took[0], piece.cost())

    def call(self, fn: Callable[[Any, Any], Any], item: Any) -> tuple[Any, float]:
        """Run ``fn(cuda, item)`` as one piece in its turn with the guest context current;
        its value and the seconds it took."""
        self.turn()
        with self._gpu, context.current(self.cuda, self.ctx), self._timer() as took:
            out = fn(self.cuda, item)
        return out, self._account(took[0], 0)

    @contextlib.contextmanager
    def _timer(self) -> Iterator[list[float]]:
        """Time a piece: the engine time the daemon charged to the guest's context meanwhile
        (what the host's frames wait behind; not the time the piece waited for the daemon's
        guest period), or the wall time where the table cannot be read. Yields a list that
        holds the seconds once the block ends."""
        took = [0.0]
        t0 = time.monotonic()
        e0 = self._engine_s()
        yield took
        e1 = self._engine_s()
        wall = time.monotonic() - t0
        took[0] = e1 - e0 if e0 is not None and e1 is not None and e1 > e0 else wall

    def _engine_s(self) -> float | None:
        try:
            return engine_seconds(self.mount)
        except (OSError, ValueError):
            return None

    def turn(self) -> None:
        """Wait for the next piece's turn (the paper's Fig. 2); HostReturned when the host
        keeps the node busy for ``wait_s``."""
        context.nice_guest_thread()
        deadline = time.monotonic() + self.wait_s
        while True:
            if self.saver_file and self.state is NodeState.FULL:
                self._wait_slot(periodic=False)
                return
            if not self.saver_file and self.state is not NodeState.BUSY:
                k = self._time_null()
                self._feed(StateMachine.null_kernel, k)
                if self.mode is not Mode.SUSPENDED:
                    self._wait_slot(self.mode is Mode.PERIODIC)
                    return
            if time.monotonic() > deadline:
                with self._lock:
                    self.stats["interrupted"] += 1
                raise HostReturned(f"node {self.name}: host busy for {self.wait_s} s")
            self._stop.wait(self.sample_s / 2)

    def piece_budget(self) -> float:
        """How long the next piece may take (seconds): P, or a whole frame period 1/F while
        the node is fully idle and its host draws nothing (a returning host then waits at
        most one frame, and larger pieces waste less on their fixed costs)."""
        if self.mode is Mode.CONTINUOUS and not self.frames.drawing(time.monotonic(),
                                                                     DRAWING_S):
            return max(self.budget.piece_s, 1.0 / self.budget.fps)
        return self.budget.piece_s

    @property
    def state(self) -> NodeState:
        """The node's current state."""
        return self.machine.state

    @property
    def mode(self) -> Mode:
        """The node's current execution mode."""
        return self.machine.mode

    def snapshot(self) -> dict[str, Any]:
        """The node's published record: state, mode, transitions, throughput, host load."""
        now = time.monotonic()
        with self._lock:
            m, up = self.machine, max(now - self.started, 1e-9)
            in_state = dict(self._in_state)
            in_state[m.state.value] += now - m.since
            return {"name": self.name, "mount": self.mount, "state": m.state.value,
                    "mode": m.mode.value, "transitions": m.transitions,
                    "transitions_per_min": round(m.per_minute(now=now), 2),
                    "alpha_ms": round(m.thresholds.alpha_s * 1e3, 3),
                    "minor": self.minor, "guest_class": self.guest_class,
                    "last_k_ms": round(self.last_k * 1e3, 3), "cpu": round(self.cpu, 3),
                    "vram": self.vram, "uptime_s": round(up, 3), **self.stats,
                    "pieces_per_s": round(self.stats["pieces"] / up, 3),
                    "fps": m.thresholds.fps, "piece_ms": round(self.piece_s * 1e3, 3),
                    "budget_ms": round(self.budget.piece_s * 1e3, 3),
                    "budget_shrinks": self.budget.shrinks,
                    "frames_kept": _ratio(kept(self.frames.with_guests)),
                    "frames_kept_all": _ratio(kept(self.frames.total)),
                    "frame_ticks": self.frames.total[0],
                    "seconds_in_state": {k: round(v, 3) for k, v in in_state.items()}}

    def _wait_slot(self, periodic: bool) -> None:
        """Pieces start at least 1/F apart in the periodic mode; and, in either mode while the
        host draws frames, at least (piece time / the budget's share) apart, so guests hold
        the GPU for at most that share of the host's time (budget.py): where even the
        smallest piece takes longer than P, pieces come less often instead."""
        gap = 1.0 / self.budget.fps if periodic else 0.0
        now = time.monotonic()
        if self.frames.drawing(now, DRAWING_S):
            gap = max(gap, self.piece_s / self.budget.share)
        if self._next_slot > now:
            self._stop.wait(self._next_slot - now)
        self._next_slot = max(time.monotonic(), self._next_slot) + gap

    def _time_null(self, blocking: bool = True) -> float | None:
        """Time one null kernel (k, seconds); None when ``blocking`` is False and a piece
        holds the GPU context (the monitor never waits behind pieces: it must keep sampling)."""
        if not self._gpu.acquire(blocking=blocking):
            return None
        try:
            with context.current(self.cuda, self.ctx):
                t0 = time.perf_counter()
                self.cuda.cuLaunchKernel(self._null, 1, 1, 1, 1, 1, 1, 0, None, [self._out, 0])
                self.cuda.cuCtxSynchronize()
                k = time.perf_counter() - t0
        finally:
            self._gpu.release()
        self.last_k = k
        return k

    def _function(self, kernel: Any) -> Any:
        """The loaded function of ``kernel``; its module is loaded once per node."""
        with self._gpu, context.current(self.cuda, self.ctx):
            mod = self._modules.get(kernel.module_id)
            if mod is None:
                mod = self._modules[kernel.module_id] = self.cuda.cuModuleLoadData(kernel.ptx)
            return self.cuda.cuModuleGetFunction(mod, kernel.name)

    def _account(self, seconds: float, threads: int) -> float:
        with self._lock:
            self.stats["pieces"] += 1
            self.stats["threads"] += threads
            self.stats["gpu_s"] += seconds
            self.piece_s = seconds if not self.piece_s else 0.75 * self.piece_s + 0.25 * seconds
            self._last_piece = time.monotonic()
        return seconds

    def _feed(self, step: Callable[..., Any], *args: Any) -> None:
        """Apply one input, ``step(machine, *args)``; account and report a state change."""
        with self._lock:
            before, since = self.machine.state, self.machine.since
            step(self.machine, *args)
            changed = self.machine.state is not before
            if changed:
                self._in_state[before.value] += self.machine.since - since
        if changed and self.on_change is not None:
            self.on_change(self.snapshot())

    def _monitor(self) -> None:
        # Not niced (unlike the pieces' thread): it must see the host come back promptly.
        seen = 0
        while not self._stop.wait(self.sample_s):
            pieces = int(self.stats["pieces"])
            self._watch_frames(guests_ran=pieces != seen)
            seen = pieces
            if self.saver_file:
                on = _idle_for(self.saver_file) >= self.saver_s
                self._feed(StateMachine.screensaver, on)
                continue
            try:
                self.cpu, self.vram = self.probe.sample()
            except OSError:
                continue  # the daemon is restarting or gone: keep the last state
            self._feed(StateMachine.sample, self.cpu, self.vram)
            idle_gpu = time.monotonic() - self._last_piece > self.sample_s
            if self.state is not NodeState.BUSY and idle_gpu:
                k = self._time_null(blocking=False)
                if k is not None:
                    self._feed(StateMachine.null_kernel, k)


    def _watch_frames(self, guests_ran: bool) -> None:
        """Read the host's frame counter and let the budget follow it."""
        if self.frames_file:
            reading = read_frames(self.frames_file)
            with self._lock:
                self.frames.feed(reading, guests_ran)
                self.budget.judge(self.frames)


def _idle_for(activity_file: str) -> float:
    """Seconds since the host's last input, from its activity file (``ACTIVITY UNIXTIME``);
    0 while it is active or when the file cannot be read."""
    try:
        with open(activity_file) as f:
            activity, stamp = f.read().split()
    except (OSError, ValueError):
        return 0.0
    return time.time() - float(stamp) if activity == "idle" else 0.0


def _ratio(x: float | None) -> float | None:
    return None if x is None else round(x, 4)
