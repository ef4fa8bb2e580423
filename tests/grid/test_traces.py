"""Hosts replayed from edge-case traces while the grid multiplies (the hold-out trace's
cases): every guest result exact, none kept twice, none lost, and the job's ranges a
partition of its rows at the end, whatever the hosts do, including hosts whose trace is
refused and traces shorter than the run."""

from __future__ import annotations

import time

import numpy as np
import pytest

from libgdev.grid import GridClient
from libgdev.grid.matmul import reference

from .conftest import NODES

pytestmark = [pytest.mark.mount, pytest.mark.slow]

FLICKER = "".join(f"0.05 {a}\n" for a in ("busy", "idle", "interactive", "idle") * 15)
SCENARIOS = {
    # name: one trace per node (None: no host on that node), whether some node must be busy
    "all-busy": (["3 busy\n"] * NODES, True),
    "all-idle": (["3 idle\n"] * NODES, False),
    "very-short-periods": ([FLICKER, "0.02 busy\n0.02 interactive\n" * 40, "0.01 idle\n" * 99],
                           None),
    "shorter-than-the-run": (["0.3 interactive\n", "0.2 busy\n", "0.1 idle\n"], None),
    "no-host-activity": ([None, "3 interactive\n", None], False),
    "malformed": (["2 busy\n3 dancing\n", "1 idle\nbogus line\n", "-1 busy\n"], False),
}
REFUSED = {"malformed": ["line 2: unknown activity 'dancing'", "line 2: SECONDS is not a number",
                         "line 1: SECONDS must be above 0"]}


def rand(shape, seed):
    return np.random.default_rng(seed).integers(0, 1 << 32, shape, dtype=np.uint32)


def busy_seconds(status: dict) -> float:
    return sum(s["seconds_in_state"]["busy"] for s in status.values())


def settled_status(g: GridClient, timeout_s: float = 20.0) -> dict:
    """The nodes' status once none is busy: a scenario's busy time is its own, not the tail
    of the previous scenario's hosts (leaving busy takes ``idle_after`` quiet samples)."""
    deadline = time.monotonic() + timeout_s
    while True:
        status = g.status()
        if all(s["state"] != "busy" for s in status.values()):
            return status
        assert time.monotonic() < deadline, f"nodes still busy after {timeout_s} s: {status}"
        time.sleep(0.1)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_guest_results_exact_once_whatever_the_hosts_do(grid, tmp_path, name):
    traces, some_busy = SCENARIOS[name]
    g = GridClient(grid.client)
    before = settled_status(g)
    hosts = []
    for node, text in enumerate(traces):
        if text is not None:
            path = tmp_path / f"node{node}.trace"
            path.write_text(text)
            hosts.append(grid.host(node, str(path), str(tmp_path / f"r{node}.json")))
    rounds, rows = 0, 0
    try:
        # Multiply while any host replays, and once more after the last one ended (the run
        # outlasts every trace).
        while any(h.poll() is None for h in hosts) or rounds < 2:
            a, b = rand((16 * 6 + rounds, 64), rounds), rand((64, 48), 100 + rounds)
            assert np.array_equal(g.matmul(a, b), reference(a, b))
            g.last_job.check()
            rounds, rows = rounds + 1, rows + a.shape[0]
    finally:
        errors = [h.communicate(timeout=120)[1] for h in hosts]
    assert g.duplicates == 0
    assert sum(g.units_by_node.values()) == rows  # every row computed once, none lost
    if name in REFUSED:
        assert [h.returncode for h in hosts] == [2] * len(hosts)
        for err, why in zip(errors, REFUSED[name], strict=True):
            assert why in err, err
    else:
        assert all(h.returncode == 0 for h in hosts), errors
    busy = busy_seconds(g.status()) - busy_seconds(before)
    if some_busy is True:
        assert busy > 0
    elif some_busy is False:
        assert busy == 0  # no host held more than 1 MB: never busy


def test_nodes_publish_their_hosts_frames_and_budget(grid, tmp_path):
    """A host drawing while guests run: its node reports the frames kept (a fraction, not
    asserted against a rate: the machine is shared), its F and budget P, and its pieces'
    time, which the client used to size them."""
    trace = tmp_path / "draw.trace"
    trace.write_text("4 interactive\n")
    host = grid.host(1, str(trace), str(tmp_path / "r.json"))
    g = GridClient(grid.client)
    try:
        while host.poll() is None:
            a, b = rand((64, 64), 1), rand((64, 64), 2)
            assert np.array_equal(g.matmul(a, b), reference(a, b))
    finally:
        host.communicate(timeout=120)
    node1 = next(s for s in g.status().values() if s["name"] == "1")
    assert node1["frame_ticks"] > 0 and 0 <= node1["frames_kept_all"] <= 1
    assert node1["fps"] == 30.0 and 0 < node1["budget_ms"] <= 1e3 * 0.3 / 30
    assert node1["piece_ms"] > 0
    assert g.sizer.nodes and all(n.samples > 0 for n in g.sizer.nodes.values())
    with pytest.raises(ValueError, match="units per piece must be positive"):
        g.matmul(rand((4, 4), 1), rand((4, 4), 2), rows=0)
    assert np.array_equal(g.matmul(rand((0, 4), 1), rand((4, 3), 2)), np.zeros((0, 3)))
