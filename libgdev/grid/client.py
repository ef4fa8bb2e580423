"""The grid client: submits guest work to the Dask workers that are grid nodes.

Work is a list of pieces (kernel launches, or calls of a Python function using the CUDA
layer), each with an id. The client keeps a small window of pieces in flight per node,
choosing nodes by their published state: fully idle first, then partially idle, never busy.
A piece whose node's host came back (an interrupted outcome), or whose task failed, goes back
to the queue and runs elsewhere; a piece lost with its worker is rerun by Dask. Results are
kept once per piece id: a second result for the same piece (a rerun that raced the first) is
counted and dropped, so none is lost and none is returned twice.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from distributed import Client, wait

from .matmul import matmul_pieces
from .pieces import Piece
from .plugin import TOPIC, node_snapshot, run_function_piece, run_kernel_piece

RANK = {"fully-idle": 0, "partially-idle": 1}
BUSY_HOLD_S = 1.0  # after an interrupted piece, leave its node alone this long


class GridError(RuntimeError):
    """A piece failed on every attempt; carries the last error."""


class GridClient:
    """Guest work over a Dask ``client`` whose workers run :class:`GdevNodePlugin`.

    ``depth`` pieces in flight per fully idle node (one per partially idle node),
    ``max_attempts`` failed tries per piece before :class:`GridError` (interruptions by a
    returning host do not count: they are the grid working as designed).
    """

    def __init__(self, client: Client, depth: int = 2, max_attempts: int = 20,
                 poll_s: float = 0.1) -> None:
        self.client, self.depth, self.poll_s = client, depth, poll_s
        self.max_attempts = max_attempts
        self._states: dict[str, dict] = {}
        self._held: dict[str, float] = {}
        self._lock = threading.Lock()
        self.duplicates = 0
        self.resubmitted = 0
        self._alive: set[str] = set()
        self._alive_at = -1e9
        for _, msg in client.get_events(TOPIC):
            self._on_event((0, msg))
        client.subscribe_topic(TOPIC, self._on_event)

    def map_pieces(self, pieces: Sequence[Piece]) -> list[list[np.ndarray]]:
        """Run kernel pieces; each piece's output arrays, in the order of ``pieces``."""
        specs = {i: (run_kernel_piece, (p if p.piece_id == i else _with_id(p, i),))
                 for i, p in enumerate(pieces)}
        return self._run(specs)

    def map_function(self, fn: Callable[[Any, Any], Any], items: Sequence[Any]) -> list:
        """Run ``fn(cuda, item)`` for each item on the grid (``cuda``: the node's CUDA driver,
        the guest context current); the return values in order."""
        return self._run({i: (run_function_piece, (i, fn, item)) for i, item in enumerate(items)})

    def matmul(self, a: np.ndarray, b: np.ndarray, rows: int = 16) -> np.ndarray:
        """``a @ b`` for uint32 matrices (modulo 2^32), ``rows`` rows of the result per piece."""
        pieces = matmul_pieces(a, b, rows)
        return np.concatenate([out[0] for out in self.map_pieces(pieces)], axis=0)

    def states(self) -> dict[str, dict]:
        """The latest published record of every node, by worker address."""
        with self._lock:
            return dict(self._states)

    def status(self) -> dict[str, dict]:
        """Every node's live record, asked of the workers now (by worker address)."""
        return self.client.run(node_snapshot)

    def _on_event(self, event: tuple) -> None:
        msg = event[1]
        if isinstance(msg, dict) and "worker" in msg:
            with self._lock:
                self._states[msg["worker"]] = msg
                if msg.get("state") != "busy":
                    self._held.pop(msg["worker"], None)

    def _run(self, specs: dict[int, tuple]) -> list:
        """Run every spec to one result; results in id order."""
        job = _Job(specs)
        while len(job.results) < len(specs):
            self._fill(job)
            if not job.inflight:
                time.sleep(self.poll_s)
                continue
            try:
                wait(list(job.inflight), timeout=self.poll_s, return_when="FIRST_COMPLETED")
            except TimeoutError:
                pass  # nothing finished: look at the nodes' states again
            for fut in [f for f in job.inflight if f.done()]:
                pid, addr = job.inflight.pop(fut)
                self._collect(job, fut, pid, addr)
        for fut in job.inflight:
            fut.cancel()
        return [job.results[i] for i in sorted(specs)]

    def _fill(self, job: _Job) -> None:
        """Submit queued pieces to the best nodes until each node's window is full."""
        load: dict[str, int] = {}
        for _, addr in job.inflight.values():
            load[addr] = load.get(addr, 0) + 1
        for addr, limit in self._targets():
            while job.todo and load.get(addr, 0) < limit:
                pid = job.todo.popleft()
                if pid in job.results:
                    continue
                job.attempts[pid] += 1
                fn, args = job.specs[pid]
                key = f"gdev-grid-{job.id}-{pid}-{job.attempts[pid]}"
                fut = self.client.submit(fn, *args, key=key, workers=[addr],
                                         allow_other_workers=True, pure=False)
                job.inflight[fut] = (pid, addr)
                load[addr] = load.get(addr, 0) + 1

    def _targets(self) -> list[tuple[str, int]]:
        """(worker, window) of the nodes to use now, fully idle first; busy ones left out."""
        now = time.monotonic()
        if now - self._alive_at > self.poll_s:  # one scheduler round trip per poll period
            self._alive = set(self.client.scheduler_info(n_workers=-1)["workers"])
            self._alive_at = now
        alive = self._alive
        with self._lock:
            states = {a: self._states.get(a, {}).get("state", "partially-idle") for a in alive}
            held = {a for a, t in self._held.items() if now - t < BUSY_HOLD_S}
        usable = [a for a, s in states.items() if s in RANK and a not in held]
        usable.sort(key=lambda a: RANK[states[a]])
        return [(a, self.depth if states[a] == "fully-idle" else 1) for a in usable]

    def _collect(self, job: _Job, fut: Any, pid: int, addr: str) -> None:
        """Keep a finished piece's result once; requeue interrupted and failed pieces."""
        if fut.status == "finished":
            outcome = fut.result()
            if not outcome.interrupted:
                if pid in job.results:
                    self.duplicates += 1
                else:
                    job.results[pid] = outcome.value
                return
            with self._lock:
                self._held[addr] = time.monotonic()
        else:
            job.failures[pid] += 1
            if job.failures[pid] >= self.max_attempts:
                raise GridError(f"piece {pid} failed {job.failures[pid]} times: "
                                f"{fut.exception()!r}")
        self.resubmitted += 1
        job.todo.appendleft(pid)


@dataclass
class _Job:
    """One run's bookkeeping. Invariant: ``results`` holds one value per piece id, set once;
    a piece without one is queued in ``todo`` or in flight (an ``inflight`` value)."""

    specs: dict[int, tuple]
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    todo: deque = field(init=False)
    results: dict = field(default_factory=dict)
    attempts: dict = field(init=False)
    failures: dict = field(init=False)
    inflight: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.todo = deque(sorted(self.specs))
        self.attempts = dict.fromkeys(self.specs, 0)
        self.failures = dict.fromkeys(self.specs, 0)


def _with_id(piece: Piece, pid: int) -> Piece:
    return Piece(piece.kernel, piece.grid, piece.args, pid)
