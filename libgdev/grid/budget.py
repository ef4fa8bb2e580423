"""What keeps the host's frame rate: its frames as the node sees them, and the piece budget P.

The GPU-grid paper runs guest work in pieces of at most P milliseconds, one every 1/F in the
periodic mode, so that a host drawing F frames per second finds the GPU free every frame
period. Here P starts at a share of 1/F (``share``, 0.3: 10 ms at F = 30, the daemon's own
``guest_piece_us``) and follows the host's measured frame rate: when the frames the host
completed on time fall below ``target`` (95 %) over a window in which guest pieces ran, the
share is halved (down to ``min_share``); while the host keeps ``recover_at`` (99 %) or more it
grows back by 10 % a window, never above its start. Both bars are relative to the host's own
frame rate without guests once that was measured (on a machine too loaded for the host to
keep F alone, only the frames the guests cost count). Pure logic, no I/O: node.py feeds it.

The host's frames come from a *frames file* that the host (or any frame counter of a real
desktop) rewrites with one line ``TICKS ON_TIME UNIXTIME``: cumulative frame ticks at F and
frames completed before the next tick. ``python -m libgdev.grid.host --frames-file`` writes it.
"""

from __future__ import annotations

import os
import time
from collections import deque
from dataclasses import dataclass, field

WINDOW_TICKS = 45  # judge the frame rate over at least this many ticks (1.5 s at F = 30)


def read_frames(path: str) -> tuple[int, int] | None:
    """(ticks, on_time) from a frames file; None when it is missing or not (yet) one line of
    two non-negative integers and a time (a host that never drew, or a torn write)."""
    try:
        with open(path) as f:
            words = f.read(256).split()
        ticks, on_time = int(words[0]), int(words[1])
    except (OSError, ValueError, IndexError):
        return None
    if len(words) != 3 or not 0 <= on_time <= ticks:
        return None
    return ticks, on_time


def write_frames(path: str, ticks: int, on_time: int, stamp: float) -> None:
    """Replace the frames file at ``path`` atomically (a reader never sees half a line)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(f"{ticks} {on_time} {stamp:.3f}\n")
    os.replace(tmp, path)


@dataclass
class FrameMeter:
    """The host's frames kept, from successive (ticks, on_time) readings.

    ``with_guests`` counts only the intervals in which guest pieces ran on the node: the
    paper's criterion (the host's frame rate *while guests run*). Invariant: ``on_time <=
    ticks`` in every counter; a reading that goes backwards (the host restarted) starts a new
    baseline and counts nothing.
    """

    last: tuple[int, int] | None = None
    total: list[int] = field(default_factory=lambda: [0, 0])
    with_guests: list[int] = field(default_factory=lambda: [0, 0])
    recent: deque[tuple[int, int, bool]] = field(default_factory=deque)
    ticked_at: float = float("-inf")

    def feed(self, reading: tuple[int, int] | None, guests_ran: bool,
             now: float | None = None) -> None:
        """Account one reading of the frames file (taken at monotonic time ``now``)."""
        if reading is None:
            return
        if self.last is not None and reading[0] != self.last[0]:
            self.ticked_at = time.monotonic() if now is None else now
        last, self.last = self.last, reading
        if last is None or reading[0] < last[0] or reading[1] < last[1]:
            return
        dt, do = reading[0] - last[0], min(reading[1] - last[1], reading[0] - last[0])
        if dt == 0:
            return
        for counter in (self.total, self.with_guests) if guests_ran else (self.total,):
            counter[0] += dt
            counter[1] += do
        self.recent.append((dt, do, guests_ran))
        while sum(t for t, _, _ in self.recent) - self.recent[0][0] >= WINDOW_TICKS:
            self.recent.popleft()

    def alone(self) -> float:
        """Frames kept without guests, once WINDOW_TICKS of them were seen; 1.0 before."""
        ticks = self.total[0] - self.with_guests[0]
        if ticks < WINDOW_TICKS:
            return 1.0
        return (self.total[1] - self.with_guests[1]) / ticks

    def drawing(self, now: float, within_s: float) -> bool:
        """Whether the host's frame counter moved in the last ``within_s`` seconds."""
        return now - self.ticked_at < within_s

    def window(self) -> tuple[int, int, bool]:
        """(ticks, on time, whether guests ran) over the recent window."""
        return (sum(t for t, _, _ in self.recent), sum(o for _, o, _ in self.recent),
                any(g for _, _, g in self.recent))

    def restart_window(self) -> None:
        """Forget the recent window (after the budget acted on it)."""
        self.recent.clear()


def kept(counter: list[int]) -> float | None:
    """Frames kept (on time over ticks) of a counter; None before any tick."""
    return counter[1] / counter[0] if counter[0] else None


@dataclass
class Budget:
    """P, the longest a guest piece should take on this node (seconds), from F and the host's
    frames. Invariant: ``min_share <= share <= start_share``."""

    fps: float = 30.0
    share: float = 0.3
    target: float = 0.95
    recover_at: float = 0.99
    min_share: float = 0.05
    shrinks: int = 0

    def __post_init__(self) -> None:
        self.start_share = self.share

    @property
    def piece_s(self) -> float:
        """The budget P in seconds."""
        return self.share / self.fps

    def judge(self, meter: FrameMeter) -> None:
        """Shrink or grow P from the meter's recent window once it is long enough. The bar
        is ``target`` of F, or of the host's own frame rate without guests where that was
        measured and is lower (a machine too loaded to keep F is not the guests' doing)."""
        ticks, on_time, guests_ran = meter.window()
        if ticks < WINDOW_TICKS:
            return
        if guests_ran and on_time < self.target * meter.alone() * ticks:
            self.share = max(self.share / 2, self.min_share)
            self.shrinks += 1
            meter.restart_window()
        elif on_time >= self.recover_at * meter.alone() * ticks and \
                self.share < self.start_share:
            self.share = min(self.share * 1.1, self.start_share)
            meter.restart_window()
