"""The grid end to end on one machine: three gdevd nodes, three Dask worker processes."""

from __future__ import annotations

import concurrent.futures
import json
import os
import signal
import time

import numpy as np
import pytest

from libgdev.grid import GridClient, Kernel, Out, Piece
from libgdev.grid.cli import status
from libgdev.grid.matmul import matmul_pieces, reference
from libgdev.grid.plugin import Outcome, run_kernel_piece

from .conftest import DATA, NODES

pytestmark = [pytest.mark.mount, pytest.mark.slow]


def rand(shape, seed):
    return np.random.default_rng(seed).integers(0, 1 << 32, shape, dtype=np.uint32)


def test_matmul_on_three_nodes_is_exact(grid):
    g = GridClient(grid.client)
    a, b = rand((16 * 12, 48), 1), rand((48, 40), 2)
    assert np.array_equal(g.matmul(a, b, rows=16), reference(a, b))
    assert g.duplicates == 0
    nodes = g.status()
    assert sorted(s["name"] for s in nodes.values()) == [str(i) for i in range(NODES)]
    assert sum(s["pieces"] for s in nodes.values()) >= 12
    assert {s["mount"] for s in nodes.values()} == {d.mount for d in grid.daemons}
    assert all(s["guest_class"] is True for s in nodes.values())  # the daemons' guests


def test_cuda_source_compiled_once_and_python_function_guests(grid):
    src = ('extern "C" __global__ void iota(unsigned *out, unsigned base)'
           '{ unsigned i = threadIdx.x; out[i] = base + i; }')
    k = Kernel.from_cuda(src, "iota", (32, 1, 1))
    g = GridClient(grid.client)
    pieces = [Piece(k, (1, 1, 1), (Out((32,)), np.uint32(100 * i))) for i in range(6)]
    outs = g.map_pieces(pieces)
    for i, (out,) in enumerate(outs):
        assert np.array_equal(out, 100 * i + np.arange(32, dtype=np.uint32))

    def double_on_gpu(cuda, x):
        host = np.full(4, x, np.uint32)
        d = cuda.cuMemAlloc(host.nbytes)
        cuda.cuMemcpyHtoD(d, host)
        cuda.cuMemcpyDtoH(host, d)
        cuda.cuMemFree(d)
        return int(host.sum()) * 2, os.environ["GDEV_MOUNT"]

    got = g.map_function(double_on_gpu, list(range(5)))
    assert [v for v, _ in got] == [8 * x for x in range(5)]
    assert {m for _, m in got} <= {d.mount for d in grid.daemons}


def test_status_command_lists_every_node(grid):
    text = status(grid.cluster.scheduler_address, as_json=False)
    lines = text.splitlines()
    assert len(lines) == NODES + 2 and lines[-1].startswith(f"nodes {NODES}:")
    raw = json.loads(status(grid.cluster.scheduler_address, as_json=True))
    assert all(s["state"] in ("busy", "partially-idle", "fully-idle") for s in raw.values())


def test_piece_on_a_busy_node_is_handed_back_and_completes_elsewhere(grid, tmp_path):
    trace = tmp_path / "busy.trace"
    trace.write_text("30 busy\n")
    host = grid.host(0, str(trace), str(tmp_path / "r.json"))
    try:
        node0 = grid.workers()["0"]
        g = GridClient(grid.client)
        deadline = time.monotonic() + 60
        while grid.client.run(_state, workers=[node0])[node0] != "busy":
            assert time.monotonic() < deadline, "the busy host was never detected"
            time.sleep(0.2)
        piece = matmul_pieces(rand((16, 16), 3), rand((16, 16), 4))[0]
        fut = grid.client.submit(run_kernel_piece, piece, workers=[node0], pure=False)
        outcome = fut.result(timeout=60)
        assert isinstance(outcome, Outcome) and outcome.interrupted and outcome.node == "0"

        first = FirstOn(grid.client, node0)
        a, b = rand((16 * 6, 32), 5), rand((32, 32), 6)
        assert np.array_equal(first.matmul(a, b), reference(a, b))
        assert first.resubmitted >= 1 and first.duplicates == 0
        assert g.states()[node0]["state"] == "busy"  # published by the node itself
    finally:
        host.kill()
        host.wait()


def test_worker_killed_mid_task_its_task_completes(grid):
    g = GridClient(grid.client)
    pids = grid.client.run(os.getpid)
    victim = grid.workers()["1"]

    def slow(cuda, x):
        time.sleep(1.0)
        return x * x, os.getpid()

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        fut = pool.submit(g.map_function, slow, list(range(9)))
        time.sleep(2.0)  # every node is inside a one-second piece by now
        os.kill(pids[victim], signal.SIGKILL)
        got = fut.result(timeout=240)
    assert [v for v, _ in got] == [x * x for x in range(9)]
    assert g.duplicates == 0
    assert pids[victim] not in grid.client.run(os.getpid).values()  # it really died


class FirstOn(GridClient):
    """A client that sends its first pieces to one node whatever its state (as a client does
    whose view is stale: the host came back after the last published state), and keeps them
    there (Dask would otherwise move such small tasks to idle workers)."""

    def __init__(self, client, addr):
        super().__init__(client)
        self.addr, self.sent = addr, 0

    def _targets(self):
        self.sent += 1
        if self.sent <= 1:
            return [(self.addr, self.depth)]
        return [t for t in super()._targets() if t[0] != self.addr]

    def _submit(self, fn, args, key, addr):
        if addr != self.addr:
            return super()._submit(fn, args, key, addr)
        return self.client.submit(fn, *args, key=key, workers=[addr], pure=False)


def _state(dask_worker):
    return dask_worker.plugins["gdev-grid"].node.state.value


def test_hosts_replayed_from_traces_every_result_exact(grid, tmp_path):
    """Three hosts replay their traces (idle, interactive, busy periods) while the grid
    multiplies: every result exact, none twice; the node whose host games is seen busy, the
    node whose host never holds 1 MB never is."""
    g = GridClient(grid.client)
    before = g.status()
    reports = [tmp_path / f"r{i}.json" for i in range(NODES)]
    hosts = [grid.host(i, os.path.join(DATA, f"node{i}.trace"), str(reports[i]))
             for i in range(NODES)]
    try:
        rounds = 0
        while any(h.poll() is None for h in hosts) or rounds < 2:
            a, b = rand((16 * 9, 64), 10 + rounds), rand((64, 48), 20 + rounds)
            assert np.array_equal(g.matmul(a, b), reference(a, b))
            rounds += 1
    finally:
        for h in hosts:
            h.wait(timeout=120)
    assert g.duplicates == 0 and all(h.returncode == 0 for h in hosts)
    after, names = g.status(), {s["name"]: a for a, s in before.items()}

    def busy_s(node):
        addr = names[node]
        return (after[addr]["seconds_in_state"]["busy"]
                - before[addr]["seconds_in_state"]["busy"])

    assert busy_s("0") == 0 and busy_s("2") > 0
    for r in reports:
        report = json.loads(r.read_text())
        assert set(report) == {"idle", "interactive", "busy"}


def test_worker_started_with_the_preload_is_a_node(grid):
    """The deployment path of docs/grid.md: ``dask worker --preload libgdev.grid.plugin
    --gdev-mount M --gdev-minor 1`` (here a one-worker LocalCluster with the same options)."""
    import distributed

    mount = grid.daemons[0].mount
    argv = ["--gdev-mount", mount, "--gdev-minor", "1", "--gdev-cpu", "tenants"]
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=":0", worker_dashboard_address=":0",
                                  preload=["libgdev.grid.plugin"], preload_argv=argv
                                  ) as cluster, distributed.Client(cluster) as client:
        g = GridClient(client)
        a, b = rand((32, 16), 7), rand((16, 16), 8)
        assert np.array_equal(g.matmul(a, b), reference(a, b))
        (node,) = g.status().values()
        assert node["mount"] == mount and node["minor"] == 1 and node["guest_class"] is True
        assert node["pieces"] == len(g.last_job.results) >= 2  # one worker ran every piece
