"""A grid on one machine: three gdevd mounts and a LocalCluster of three worker processes,
worker ``i`` a node of mount ``i`` (GdevNodePlugin) on that mount's guest vGPU 1."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass

import pytest

from tests.daemon.conftest import Gdevd, start_gdevd, stop_gdevd

NODES = 3
GUEST_VGPU = 1  # each node's owner donates vGPU 1: its contexts are the daemon's guests
# The CPU threshold: on a shared 2-core machine under a load of 10-15 a busy host's computing
# thread gets a tenth of a core or less, so the paper's 30 % (or even 10 %) would make
# detection a matter of luck; the video-memory threshold (1 MB) still keeps every host
# without a busy period (idle and interactive hosts hold less) from being busy.
CPU_BUSY = 0.03
DATA = os.path.join(os.path.dirname(__file__), "data")


@dataclass
class Grid:
    """The daemons, the cluster, a Dask client and the worker address of each node."""

    daemons: list[Gdevd]
    cluster: object
    client: object
    frames: list[str]  # each node's host frame counter (budget.py), read by its node

    def workers(self) -> dict[str, str]:
        """Node name -> worker address."""
        info = self.client.scheduler_info(n_workers=-1)["workers"]
        return {str(w["name"]): addr for addr, w in info.items()}

    def host(self, node: int, trace: str, report: str, fps: float = 30.0) -> subprocess.Popen:
        """Start a host replaying ``trace`` on node ``node``'s mount."""
        return subprocess.Popen([sys.executable, "-m", "libgdev.grid.host",
                                 self.daemons[node].mount, trace, "--fps", str(fps),
                                 "--report", report, "--frames-file", self.frames[node]],
                                stderr=subprocess.PIPE, text=True)


def donate(d: Gdevd, minor: int) -> None:
    """Make vGPU ``minor`` of ``d`` a guest vGPU (root writes ``vdN/guest``)."""
    with open(d.proc_path(f"vd{minor}", "guest"), "w") as f:
        f.write("1")


@pytest.fixture(scope="package")
def grid(tmp_path_factory):
    """Three nodes (one gdevd each) on a LocalCluster of three single-thread processes, shared
    by the package's tests (starting them costs tens of seconds on a loaded machine)."""
    distributed = pytest.importorskip("distributed")
    from libgdev.grid import GdevNodePlugin

    daemons = []
    try:
        daemons = [start_gdevd() for _ in range(NODES)]
        for d in daemons:
            donate(d, GUEST_VGPU)
        with distributed.LocalCluster(n_workers=NODES, threads_per_worker=1, processes=True,
                                      dashboard_address=":0", worker_dashboard_address=":0"
                                      ) as cluster, distributed.Client(cluster) as client:
            mounts = {i: d.mount for i, d in enumerate(daemons)}
            tmp = tmp_path_factory.mktemp("frames")
            frames = [str(tmp / f"frames{i}") for i in range(NODES)]
            client.register_plugin(GdevNodePlugin(mounts=mounts, minor=GUEST_VGPU, wait_s=0.5,
                                                  cpu_busy=CPU_BUSY,
                                                  frames_files=dict(enumerate(frames))))
            yield Grid(daemons, cluster, client, frames)
        for d in daemons:
            assert "Traceback" not in d.log_text(), d.log_text()
    finally:
        for d in daemons:
            stop_gdevd(d)
