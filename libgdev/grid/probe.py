"""What a node measures about its host: CPU usage and video memory, read from /proc files.

Video memory is the device memory held by the host's contexts on this node's gdevd, from
``MOUNT/proc/gdev/contexts`` (one line per context: its opener's pid and its memory); the
guest's own contexts (this process) are left out. The same table gives the engine time the
daemon charged to the guest's own contexts: a piece's time on the GPU (:func:`engine_seconds`),
without the time it waited for its turn. CPU usage comes from one of two sources:

* ``"system"``: the whole machine (``/proc/stat``) minus this process, as a fraction of one
  core (the paper's CPU usage on a dedicated desktop);
* ``"tenants"``: the processes that hold host contexts on this gdevd (``/proc/PID/stat``), as
  a fraction of one core; what tests use when several nodes share one machine.
"""

from __future__ import annotations

import os
import time
from collections import deque
from dataclasses import dataclass, field

_TICK = os.sysconf("SC_CLK_TCK")


def host_contexts(mount: str, own_pid: int | None = None) -> list[tuple[int, int]]:
    """(pid, device memory bytes) of every context on the mount not opened by ``own_pid``.

    Columns are found by the table's header, so added columns do not break it; a table that
    cannot be read (daemon gone) raises OSError.
    """
    own_pid = os.getpid() if own_pid is None else own_pid
    with open(os.path.join(mount, "proc", "gdev", "contexts")) as f:
        lines = f.read().splitlines()
    if not lines:
        return []
    head = lines[0].split()
    ipid, imem = head.index("pid"), head.index("memory")
    rows = []
    for line in lines[1:]:
        cols = line.split()
        if len(cols) == len(head) and int(cols[ipid]) != own_pid:
            rows.append((int(cols[ipid]), int(cols[imem])))
    return rows


def engine_seconds(mount: str, pid: int | None = None) -> float:
    """Engine time (compute and copy, seconds) the daemon charged so far to the contexts of
    process ``pid`` (default: this one) on the mount; OSError when the table cannot be read."""
    pid = os.getpid() if pid is None else pid
    with open(os.path.join(mount, "proc", "gdev", "contexts")) as f:
        lines = f.read().splitlines()
    head = lines[0].split() if lines else []
    ipid, icomp, icopy = head.index("pid"), head.index("compute_ms"), head.index("copy_ms")
    ms = 0.0
    for line in lines[1:]:
        cols = line.split()
        if len(cols) == len(head) and int(cols[ipid]) == pid:
            ms += float(cols[icomp]) + float(cols[icopy])
    return ms / 1e3


def _proc_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) used by ``pid`` so far; 0 if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICK


def _system_cpu_s() -> float:
    """CPU seconds spent not idle by the whole machine so far."""
    with open("/proc/stat") as f:
        cols = [int(c) for c in f.readline().split()[1:]]
    idle = cols[3] + (cols[4] if len(cols) > 4 else 0)
    return (sum(cols[:8]) - idle) / _TICK


@dataclass
class HostProbe:
    """Samples (cpu, vram) of this node's host. CPU usage is averaged over the last
    ``window_s`` seconds (as utilisation logs are), so one descheduled moment of a busy host
    does not read as idle. Invariant: ``_history`` holds (time, counters) of recent samples,
    oldest first, the oldest at least ``window_s`` old once there is one."""

    mount: str
    cpu_source: str = "tenants"
    window_s: float = 1.0
    _history: deque[tuple[float, dict[int | str, float]]] = field(default_factory=deque)

    def __post_init__(self) -> None:
        if self.cpu_source not in ("tenants", "system"):
            raise ValueError(f"cpu_source must be 'tenants' or 'system', not {self.cpu_source!r}")

    def sample(self) -> tuple[float, int]:
        """(CPU usage as a fraction of one core, host video memory in bytes)."""
        ctxs = host_contexts(self.mount)
        vram = sum(mem for _, mem in ctxs)
        now = time.monotonic()
        counters = self._counters({pid for pid, _ in ctxs})
        while len(self._history) > 1 and now - self._history[1][0] >= self.window_s:
            self._history.popleft()
        cpu = 0.0
        if self._history:
            then, old = self._history[0]
            used = sum(max(v - old.get(k, v), 0.0) for k, v in counters.items())
            cpu = used / (now - then) if now > then else 0.0
        self._history.append((now, counters))
        return cpu, vram

    def _counters(self, pids: set[int]) -> dict[int | str, float]:
        if self.cpu_source == "system":
            return {"system": _system_cpu_s() - _proc_cpu_s(os.getpid())}
        return {pid: _proc_cpu_s(pid) for pid in pids}
