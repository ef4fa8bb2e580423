"""A host replayed from a trace: the desktop user whose GPU the grid borrows.

A trace (the format in full: docs/grid.md) is UTF-8 text, one period per line, ``SECONDS
ACTIVITY`` (``#`` starts a comment; blank lines are skipped):

* ``idle``: nobody at the machine: no frames, no CPU, a small context (under 1 MB);
* ``interactive``: editing, browsing: one light kernel per frame at F fps, little CPU;
* ``busy``: a game or a GPU program: one heavy kernel per frame at F fps, a thread computing
  on the CPU, and 4 MiB more video memory (the paper's busy state: CPU above 30 % and video
  memory above 1 MB).

The host writes its current activity to ``activity_file`` when given (the "mouse and
keyboard" log that a screensaver-like baseline watches), its frame counter to ``frames_file``
(budget.py: what the node reads to keep the host's frame rate), and at the end a JSON report:
per activity the frame ticks and the frames completed before the next tick (the frame rate
kept).

    python -m libgdev.grid.host MOUNT TRACE [--fps 30] [--scale 1] [--report FILE] [--nice N]
                                [--activity-file FILE] [--frames-file FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import context
from .budget import write_frames
from .matmul import matmul_kernel

ACTIVITIES = ("idle", "interactive", "busy")
FRAME_ROWS = {"interactive": 16, "busy": 48}  # rows of a 64 x 64 product per frame
FRAME_N = 64
BUSY_VRAM = 4 << 20
FRAMES_EVERY_S = 0.1  # the frame counter is rewritten this often (the node samples at 0.2 s)


MAX_SECONDS = 1e7     # one period: at most about four months
MAX_LINE = 256


class TraceError(ValueError):
    """A trace that cannot be replayed; the message names the line and what is wrong."""


def parse_trace(text: str, name: str = "trace") -> list[tuple[float, str]]:
    """(seconds, activity) periods of a trace in order; :class:`TraceError` names the first
    bad line (``name`` line N: why) or says that the trace has no period."""
    periods = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if line:
            periods.append(_period_of(line, f"{name} line {n}"))
    if not periods:
        raise TraceError(f"{name}: no periods (want lines of 'SECONDS ACTIVITY')")
    return periods


def _period_of(line: str, where: str) -> tuple[float, str]:
    """One ``SECONDS ACTIVITY`` line as (seconds, activity); TraceError says what is wrong."""
    if len(line) > MAX_LINE:
        raise TraceError(f"{where}: longer than {MAX_LINE} characters")
    parts = line.split()
    if len(parts) != 2:
        raise TraceError(f"{where}: want 'SECONDS {'|'.join(ACTIVITIES)}', got {line!r}")
    try:
        seconds = float(parts[0])
    except ValueError:
        raise TraceError(f"{where}: SECONDS is not a number: {parts[0]!r}") from None
    if not 0 < seconds <= MAX_SECONDS:  # also refuses nan and inf
        raise TraceError(f"{where}: SECONDS must be above 0 and at most {MAX_SECONDS:g}, "
                         f"got {parts[0]!r}")
    if parts[1] not in ACTIVITIES:
        raise TraceError(f"{where}: unknown activity {parts[1]!r} (want one of "
                         f"{', '.join(ACTIVITIES)})")
    return seconds, parts[1]


def read_trace(path: str) -> list[tuple[float, str]]:
    """The periods of the trace file at ``path``; TraceError for an unreadable or bad one."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError(f"{path}: cannot read the trace: {exc}") from None
    return parse_trace(text, path)


@dataclass
class Host:
    """The replaying host on one mount; :meth:`replay` runs a whole trace."""

    mount: str
    fps: float = 30.0
    activity_file: str | None = None
    frames_file: str | None = None

    def replay(self, periods: list[tuple[float, str]], scale: float = 1.0) -> dict[str, Any]:
        """Replay ``periods`` (durations multiplied by ``scale``); the frame report."""
        self.cuda = context.driver_for(self.mount)
        self.ctx = self.cuda.cuCtxCreate(0, self.cuda.cuDeviceGet(0))
        try:
            self._setup_frames()
            self.report = {a: {"ticks": 0, "on_time": 0, "seconds": 0.0} for a in ACTIVITIES}
            self._counted = 0.0
            for seconds, activity in periods:
                self._period(activity, seconds * scale, self.report[activity])
            self._announce("idle")
            self._count_frames(force=True)
            return self.report
        finally:
            self.cuda.cuCtxDestroy(self.ctx)

    def _setup_frames(self) -> None:
        """The scene, on the device once (well under 1 MB): a frame is one draw call on it."""
        cuda, rows = self.cuda, max(FRAME_ROWS.values())
        rng = np.random.default_rng(1)
        a = rng.integers(0, 1 << 16, (rows, FRAME_N), dtype=np.uint32)
        b = rng.integers(0, 1 << 16, (FRAME_N, FRAME_N), dtype=np.uint32)
        self._bufs = [cuda.cuMemAlloc(x.nbytes) for x in (a, b, a)]
        cuda.cuMemcpyHtoD(self._bufs[0], a)
        cuda.cuMemcpyHtoD(self._bufs[1], b)
        kernel = matmul_kernel()
        self._function = cuda.cuModuleGetFunction(cuda.cuModuleLoadData(kernel.ptx),
                                                  kernel.name)

    def _draw(self, activity: str) -> None:
        """One frame: ``matmul_rows`` over the activity's rows of the scene, to completion."""
        rows, n = FRAME_ROWS[activity], FRAME_N
        self.cuda.cuLaunchKernel(self._function, n // 16, -(-rows // 16), 1, 16, 16, 1, 0,
                                 None, [*self._bufs, np.uint32(rows), np.uint32(n),
                                        np.uint32(n)])
        self.cuda.cuCtxSynchronize()

    def _period(self, activity: str, seconds: float, out: dict[str, Any]) -> None:
        """One period: frames at F (unless idle), CPU and memory as the activity uses them."""
        self._announce(activity)
        extra = self.cuda.cuMemAlloc(BUSY_VRAM) if activity == "busy" else None
        burner = _Burner() if activity == "busy" else None
        period, start = 1.0 / self.fps, time.monotonic()
        end, tick = start + seconds, start
        while tick < end:
            if activity != "idle":
                out["ticks"] += 1
                self._draw(activity)
                if time.monotonic() <= tick + period:
                    out["on_time"] += 1
            tick += period
            self._count_frames()
            now = time.monotonic()
            if now < tick:
                time.sleep(max(min(tick, end) - now, 0.0))
            elif activity != "idle":
                missed = int((now - tick) / period)  # frames skipped while late (vsync)
                out["ticks"] += missed
                tick += missed * period
        out["seconds"] += time.monotonic() - start
        if extra is not None:
            self.cuda.cuMemFree(extra)
        if burner is not None:
            burner.stop()

    def _count_frames(self, force: bool = False) -> None:
        """Publish the frame counter (every FRAMES_EVERY_S, or now when ``force``)."""
        now = time.monotonic()
        if not self.frames_file or (not force and now - self._counted < FRAMES_EVERY_S):
            return
        self._counted = now
        ticks = int(sum(self.report[a]["ticks"] for a in FRAME_ROWS))
        on_time = int(sum(self.report[a]["on_time"] for a in FRAME_ROWS))
        write_frames(self.frames_file, ticks, on_time, time.time())

    def _announce(self, activity: str) -> None:
        if self.activity_file:
            with open(self.activity_file, "w") as f:
                f.write(f"{activity} {time.time():.3f}\n")


class _Burner:
    """The busy host's CPU load: ``threads`` threads multiplying matrices until stopped, in
    BLAS so that they run beside the frame loop (without the GIL): a busy host uses about a
    core when it can get one."""

    def __init__(self, threads: int = 1) -> None:
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._burn, daemon=True) for _ in range(threads)]
        for t in self._threads:
            t.start()

    def _burn(self) -> None:
        x = np.random.default_rng(0).random((128, 128))
        while not self._stop.is_set():
            x @ x  # BLAS: runs without the GIL

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join()


def _renice(nice: int) -> None:
    """Set the niceness of every thread of this process (BLAS's pool included; threads started
    later inherit it); where that is not permitted the threads keep theirs."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.setpriority(os.PRIO_PROCESS, int(tid), nice)
        except OSError:
            pass


def frame_rate_kept(report: dict[str, Any]) -> float:
    """Frames completed on time over frame ticks, across the activities that draw frames."""
    ticks = sum(report[a]["ticks"] for a in FRAME_ROWS)
    return sum(report[a]["on_time"] for a in FRAME_ROWS) / ticks if ticks else 1.0


def main(argv: list[str] | None = None) -> None:
    """Command line: replay a trace on a mount, write the report (JSON) to --report or stdout."""
    p = argparse.ArgumentParser(prog="python -m libgdev.grid.host", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mount")
    p.add_argument("trace")
    p.add_argument("--fps", type=float, default=30.0)
    p.add_argument("--scale", type=float, default=1.0, help="multiply every duration")
    p.add_argument("--activity-file", default=None)
    p.add_argument("--frames-file", default=None,
                   help="rewrite 'TICKS ON_TIME UNIXTIME' here as frames are drawn")
    p.add_argument("--report", default=None)
    p.add_argument("--nice", type=int, default=0,
                   help="the host's CPU niceness where permitted (a negative value favours "
                        "the host on a shared machine, at the expense of its gdevd)")
    args = p.parse_args(argv)
    try:
        periods = read_trace(args.trace)
    except TraceError as exc:
        p.error(str(exc))  # exit status 2, before the host touches the mount
    if not (0 < args.fps <= 1000 and 0 < args.scale < float("inf")):
        p.error("--fps must be in (0, 1000] and --scale positive")
    _renice(args.nice)
    host = Host(args.mount, args.fps, args.activity_file, args.frames_file)
    report = host.replay(periods, args.scale)
    text = json.dumps(report, indent=1)
    if args.report:
        with open(args.report, "w") as f:
            f.write(text)
    else:
        print(text)


if __name__ == "__main__":
    main()
