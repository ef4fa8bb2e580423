"""The grid client: submits guest work to the Dask workers that are grid nodes.

Work is a job (job.py): given pieces (kernel launches, or calls of a Python function using
the CUDA layer), or work that divides along one axis, cut as it is handed out into pieces
sized for the node they go to (sizing.py: about the node's budget P, from its measured piece
times). The client keeps a small window of pieces in flight per node, choosing nodes by their
published state: fully idle first, then partially idle, never busy. A piece whose node's host
came back (an interrupted outcome), or whose task failed, goes back to the queue and runs
elsewhere; a piece lost with its worker is rerun by Dask. Results are kept once per range of
units: a second result for the same range is counted and dropped, so none is lost and none
is returned twice.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from distributed import Client, wait

from .job import Job, Task
from .matmul import check_operands, matmul_piece
from .pieces import Piece
from .plugin import TOPIC, node_snapshot, run_function_piece, run_kernel_piece
from .sizing import PieceSizer

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
                 poll_s: float = 0.1, sizer: PieceSizer | None = None) -> None:
        self.client, self.depth, self.poll_s = client, depth, poll_s
        self.max_attempts = max_attempts
        self._states: dict[str, dict[str, Any]] = {}
        self._held: dict[str, float] = {}
        self._lock = threading.Lock()
        self.duplicates = 0
        self.resubmitted = 0
        self.units_by_node: dict[str, int] = {}  # units of work done, by node name
        self.sizer = sizer or PieceSizer()
        self.last_job: Job | None = None
        self._alive: set[str] = set()
        self._alive_at = -1e9
        for _, msg in client.get_events(TOPIC):
            self._on_event((0, msg))
        client.subscribe_topic(TOPIC, self._on_event)  # type: ignore[no-untyped-call]

    def map_pieces(self, pieces: Sequence[Piece]) -> list[list[np.ndarray]]:
        """Run kernel pieces as given; each piece's output arrays, in the order of ``pieces``."""
        def make(i: int, _: int) -> Task:
            p = pieces[i]
            return run_kernel_piece, (p if p.piece_id == i else _with_id(p, i),)
        return [v for _, _, v in self._run(Job(len(pieces), make))]

    def map_function(self, fn: Callable[[Any, Any], Any], items: Sequence[Any]) -> list[Any]:
        """Run ``fn(cuda, item)`` for each item on the grid (``cuda``: the node's CUDA driver,
        the guest context current); the return values in order."""
        job = Job(len(items), lambda i, _: (run_function_piece, (i, fn, items[i])))
        return [v for _, _, v in self._run(job)]

    def map_range(self, total: int, make: Callable[[int, int], Piece],
                  units: int | None = None) -> list[tuple[int, int, list[np.ndarray]]]:
        """Run work that divides along one axis: ``make(start, count)`` builds the piece for
        units [start, start + count) of ``total``. Pieces are sized per node from its measured
        piece times and its budget P (sizing.py), or hold ``units`` each when given.
        (start, count, output arrays) of every piece, in unit order; ValueError for ``units``
        below 1."""
        if units is not None and units < 1:
            raise ValueError(f"units per piece must be positive, not {units}")

        def task(start: int, count: int) -> Task:
            return run_kernel_piece, (_with_id(make(start, count), start),)
        return self._run(Job(total, task, splittable=True), units)

    def matmul(self, a: np.ndarray, b: np.ndarray, rows: int | None = None) -> np.ndarray:
        """``a @ b`` for uint32 matrices (modulo 2^32): pieces of result rows sized per node
        to its budget P, or ``rows`` rows each when given."""
        check_operands(a, b)
        a, b = np.ascontiguousarray(a, np.uint32), np.ascontiguousarray(b, np.uint32)
        outs = self.map_range(a.shape[0], lambda r0, h: matmul_piece(a, b, r0, h), rows)
        if not outs:
            return np.zeros((0, b.shape[1]), np.uint32)
        return np.concatenate([out[0] for _, _, out in outs], axis=0)

    def states(self) -> dict[str, dict[str, Any]]:
        """The latest published record of every node, by worker address."""
        with self._lock:
            return dict(self._states)

    def status(self) -> dict[str, dict[str, Any]]:
        """Every node's live record, asked of the workers now (by worker address)."""
        snapshots: dict[str, dict[str, Any]] = self.client.run(node_snapshot)
        return snapshots

    def _on_event(self, event: tuple[Any, ...]) -> None:
        msg = event[1]
        if isinstance(msg, dict) and "worker" in msg:
            with self._lock:
                self._states[msg["worker"]] = msg
                if msg.get("state") != "busy":
                    self._held.pop(msg["worker"], None)

    def _run(self, job: Job, units: int | None = None) -> list[tuple[int, int, Any]]:
        """Run every unit of ``job`` to one result; (start, count, value) in unit order."""
        while not job.done:
            self._fill(job, units)
            if not job.inflight:
                time.sleep(self.poll_s)
                continue
            try:
                wait(list(job.inflight), timeout=self.poll_s,  # type: ignore[no-untyped-call]
                     return_when="FIRST_COMPLETED")
            except TimeoutError:
                pass  # nothing finished: look at the nodes' states again
            for fut in [f for f in job.inflight if f.done()]:
                start, count, addr = job.inflight.pop(fut)
                self._collect(job, fut, start, count, addr)
        for fut in job.inflight:
            fut.cancel()
        self.last_job = job
        return job.ordered()

    def _fill(self, job: Job, units: int | None) -> None:
        """Submit queued ranges to the best nodes until each node's window is full, each cut
        to ``units`` or to the node's adaptive size."""
        load: dict[str, int] = {}
        for _, _, addr in job.inflight.values():
            load[addr] = load.get(addr, 0) + 1
        for addr, limit in self._targets():
            while job.todo and load.get(addr, 0) < limit:
                start, count, (fn, args) = job.take(units or self.sizer.units(addr))
                key = f"gdev-grid-{job.id}-{start}-{count}-{job.attempts[start]}"
                job.inflight[self._submit(fn, args, key, addr)] = (start, count, addr)
                load[addr] = load.get(addr, 0) + 1

    def _submit(self, fn: Callable[..., Any], args: tuple[Any, ...], key: str,
                addr: str) -> Any:
        """One Dask task for ``addr``, loosely restricted (Dask may move it to another
        worker, e.g. when ``addr`` is lost); its future."""
        return self.client.submit(fn, *args, key=key, workers=[addr], allow_other_workers=True,
                                  pure=False)

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

    def _collect(self, job: Job, fut: Any, start: int, count: int, addr: str) -> None:
        """Keep a finished range's result once; requeue interrupted and failed ranges."""
        if fut.status == "finished":
            outcome = fut.result()
            if outcome.seconds > 0:
                self.sizer.observe(outcome.worker or addr, count, outcome.seconds,
                                   outcome.budget_s)
            if not outcome.interrupted:
                if job.keep(start, count, outcome.value):
                    self.units_by_node[outcome.node] = (
                        self.units_by_node.get(outcome.node, 0) + count)
                else:
                    self.duplicates += 1
                return
            with self._lock:
                self._held[addr] = time.monotonic()
        elif job.fail(start) >= self.max_attempts:
            raise GridError(f"piece {start} failed {job.failures[start]} times: "
                            f"{fut.exception()!r}")
        self.resubmitted += 1
        job.give_back(start, count)


def _with_id(piece: Piece, pid: int) -> Piece:
    return Piece(piece.kernel, piece.grid, piece.args, pid)
