"""The worker side: a Dask WorkerPlugin that makes a worker one grid node, and the task
functions that run guest pieces on it.

One worker per node, next to the node's gdevd: the plugin opens the guest context on the
node's mount, keeps the node's state, and publishes a snapshot on the scheduler's event log
(topic :data:`TOPIC`) at every state change, never otherwise; the client reads the latest
snapshot per worker to prefer fully idle nodes. Mode switches are local.

Pass it to ``client.register_plugin(GdevNodePlugin(...))``, or start workers with
``dask worker SCHEDULER --preload libgdev.grid.plugin --gdev-mount /run/gdev``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import click
from distributed import WorkerPlugin, get_worker

from .node import HostReturned, Node
from .pieces import Piece
from .state import Thresholds

TOPIC = "gdev-grid"
PLUGIN_NAME = "gdev-grid"


@dataclass
class Outcome:
    """What a piece's task returns: its value, or ``interrupted`` when the node's host came
    back before the piece could run (the client runs it elsewhere); with the time the piece
    took, the node's piece budget P (``budget_s``) and the worker's address, from which the
    client sizes the node's next piece."""

    piece_id: int
    node: str
    value: Any = None
    interrupted: bool = False
    seconds: float = 0.0
    budget_s: float = 0.0
    worker: str = ""


class GdevNodePlugin(WorkerPlugin):
    """Attach each worker to its node's gdevd: ``mount`` for every worker, or ``mounts`` by
    worker name (several nodes on one machine, as in tests), else ``$GDEV_MOUNT``.

    ``fps`` is F; ``alpha_ms`` the dedicated null-kernel time (0: measured at start);
    ``cpu_busy`` the CPU threshold (the paper's 30 %);
    ``cpu_source`` ``"tenants"`` or ``"system"`` (probe.py); ``wait_s`` how long a piece waits
    on a busy node before it is handed back. ``saver_files`` (by worker name) turns nodes into
    the screensaver-like baseline (node.py), ``saver_s`` its timeout. ``frames_files`` (by
    worker name) or ``frames_file`` (every worker) is the host's frame counter (budget.py);
    ``piece_share`` the budget P as a share of 1/F before the host's frames adjust it."""

    name = PLUGIN_NAME

    def __init__(self, mount: str | None = None, mounts: dict[str, str] | None = None,
                 minor: int = 0,
                 cpu_source: str = "tenants", fps: float = 30.0, alpha_ms: float = 0.0,
                 cpu_busy: float = Thresholds.cpu_busy,
                 sample_s: float = 0.2, wait_s: float = 1.0,
                 saver_files: dict[str, str] | None = None,
                 saver_s: float = 0.0, frames_files: dict[str, str] | None = None,
                 frames_file: str | None = None, piece_share: float = 0.3) -> None:
        self.mount, self.mounts, self.minor = mount, dict(mounts or {}), minor
        self.saver_files, self.saver_s = dict(saver_files or {}), saver_s
        self.frames_files, self.frames_file = dict(frames_files or {}), frames_file
        self.piece_share = piece_share
        self.cpu_source, self.sample_s, self.wait_s = cpu_source, sample_s, wait_s
        self.thresholds = Thresholds(cpu_busy=cpu_busy, alpha_s=alpha_ms / 1e3, fps=fps)
        self.node: Node | None = None

    def setup(self, worker: Any) -> None:
        """Open the guest context and start the node's monitor; publish the first state."""
        mount = _by_name(self.mounts, worker.name) or self.mount
        mount = mount or os.environ.get("GDEV_MOUNT", "/run/gdev")
        os.environ["GDEV_MOUNT"] = mount  # libgdev.cuda in Python-function guests

        def publish(snapshot: dict[str, Any]) -> None:
            msg = {**snapshot, "worker": worker.address}
            worker.log_event(TOPIC, msg)  # thread-safe: hops to the worker's loop

        self.node = Node(mount, str(worker.name), self.minor, self.thresholds, self.cpu_source,
                         self.sample_s, self.wait_s, publish,
                         _by_name(self.saver_files, worker.name), self.saver_s,
                         _by_name(self.frames_files, worker.name) or self.frames_file,
                         self.piece_share)
        self.node.start()
        publish(self.node.snapshot())

    def teardown(self, worker: Any) -> None:
        """Close the guest context."""
        if self.node is not None:
            self.node.close()


def _by_name(table: dict[str, Any], name: Any) -> Any:
    return table.get(name, table.get(str(name)))


def _node(worker: Any = None) -> Node:
    plugin = (worker or get_worker()).plugins.get(PLUGIN_NAME)
    node = getattr(plugin, "node", None)
    if not isinstance(node, Node):
        raise RuntimeError("this worker has no gdev-grid node (register GdevNodePlugin)")
    return node


def run_kernel_piece(piece: Piece) -> Outcome:
    """Task: run one kernel piece on this worker's node in its turn."""
    return _outcome(piece.piece_id, lambda node: node.run(piece))


def run_function_piece(piece_id: int, fn: Any, item: Any) -> Outcome:
    """Task: run ``fn(cuda, item)`` on this worker's node in its turn."""
    return _outcome(piece_id, lambda node: node.call(fn, item))


def _outcome(piece_id: int, run: Any) -> Outcome:
    worker = get_worker()
    node = _node(worker)
    try:
        value, seconds = run(node)
    except HostReturned:
        return Outcome(piece_id, node.name, interrupted=True, budget_s=node.piece_budget(),
                       worker=worker.address)
    return Outcome(piece_id, node.name, value, seconds=seconds, budget_s=node.piece_budget(),
                   worker=worker.address)


def node_snapshot(dask_worker: Any = None) -> dict[str, Any]:
    """This worker's node record (``client.run`` passes ``dask_worker``)."""
    return _node(dask_worker).snapshot()


@click.command()
@click.option("--gdev-mount", default=None, help="the node's gdevd mount ($GDEV_MOUNT)")
@click.option("--gdev-fps", default=30.0, help="F: the host's minimum frame rate")
@click.option("--gdev-cpu", default="system", help="CPU usage source: system or tenants")
@click.option("--gdev-minor", default=0, help="the vGPU to open (a guest vGPU: vdN/guest = 1)")
@click.option("--gdev-frames-file", default=None,
              help="the host's frame counter, 'TICKS ON_TIME UNIXTIME' (docs/grid.md)")
def dask_setup(worker: Any, gdev_mount: str | None, gdev_fps: float, gdev_cpu: str,
               gdev_minor: int, gdev_frames_file: str | None) -> None:
    """``dask worker --preload libgdev.grid.plugin``: make this worker a grid node."""
    plugin = GdevNodePlugin(mount=gdev_mount, minor=gdev_minor, fps=gdev_fps,
                            cpu_source=gdev_cpu, frames_file=gdev_frames_file)
    worker.plugins[PLUGIN_NAME] = plugin
    plugin.setup(worker)
