"""The grid's parts without a daemon: state machine, probes, traces, pieces, the status table."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from libgdev.grid.cli import format_table
from libgdev.grid.host import TraceError, frame_rate_kept, parse_trace, read_trace
from libgdev.grid.matmul import matmul_pieces, reference
from libgdev.grid.pieces import In, Out
from libgdev.grid.probe import HostProbe, host_contexts
from libgdev.grid.state import Mode, NodeState, StateMachine, Thresholds

MB = 1 << 20


def machine(alpha: float = 0.001, **kw) -> StateMachine:
    return StateMachine(Thresholds(alpha_s=alpha, **kw), since=0.0)


def test_busy_needs_both_cpu_and_video_memory():
    m = machine()
    assert m.sample(0.9, MB, now=1) is NodeState.PARTIAL      # 1 MB is not above 1 MB
    assert m.sample(0.3, 2 * MB, now=2) is NodeState.PARTIAL  # 30 % is not above 30 %
    assert m.sample(0.31, MB + 1, now=3) is NodeState.BUSY
    assert m.mode is Mode.SUSPENDED
    assert m.sample(0.0, 2 * MB, now=4) is NodeState.BUSY  # one quiet sample is not idleness
    assert m.sample(0.0, 2 * MB, now=5) is NodeState.PARTIAL
    assert m.transitions == 2


def test_fully_idle_after_three_null_kernels_below_alpha_in_a_row():
    m = machine(alpha=0.002)
    assert m.null_kernel(0.001) is NodeState.PARTIAL
    assert m.null_kernel(0.001) is NodeState.PARTIAL
    assert m.null_kernel(0.002) is NodeState.PARTIAL  # k >= alpha restarts the count
    for _ in range(2):
        assert m.null_kernel(0.001) is NodeState.PARTIAL
    assert m.null_kernel(0.001) is NodeState.FULL
    assert m.mode is Mode.CONTINUOUS
    assert m.null_kernel(0.005) is NodeState.PARTIAL and m.mode is Mode.PERIODIC


def test_busy_ignores_null_kernels_and_restarts_the_count():
    m = machine(alpha=0.002)
    m.null_kernel(0.001)
    m.null_kernel(0.001)
    m.sample(1.0, 8 * MB)
    assert m.null_kernel(0.001) is NodeState.BUSY
    m.sample(0.0, 0)
    m.sample(0.0, 0)
    m.null_kernel(0.001)
    assert m.state is NodeState.PARTIAL  # two below alpha before busy do not count


def test_transitions_per_minute_counts_the_window():
    m = machine(idle_after=1)
    for t in range(10):
        m.sample(1.0, 8 * MB, now=2 * t)
        m.sample(0.0, 0, now=2 * t + 1)
    assert m.transitions == 20
    assert m.per_minute(window_s=60, now=20) == pytest.approx(20 * 60 / 20)
    assert m.per_minute(window_s=10, now=20) == pytest.approx(10 * 6)


def test_busy_enters_at_once_and_leaves_after_idle_after_quiet_samples():
    m = machine(idle_after=3)
    busy, quiet = (1.0, 8 * MB), (0.0, 0)
    seq = [busy, quiet, quiet, busy, quiet, quiet, quiet]
    states = [m.sample(*s, now=i) for i, s in enumerate(seq)]
    assert states == [NodeState.BUSY] * 6 + [NodeState.PARTIAL]
    assert m.transitions == 2  # a quiet gap shorter than idle_after is no transition


def full_stint(m: StateMachine, start: float, below: int, stay_s: float) -> NodeState:
    """Feed ``below`` fast null kernels one second apart, then one slow one ``stay_s`` later."""
    for i in range(below):
        m.null_kernel(0.0005, now=start + i)
    return m.null_kernel(0.005, now=start + below - 1 + stay_s)


def test_short_full_stints_double_the_run_needed_to_return():
    m = machine(alpha=0.001, full_min_s=5.0, backoff_max=4)
    assert full_stint(m, 0, 3, 1.0) is NodeState.PARTIAL  # FULL for 1 s: leaves at once
    assert m.need_full == 6
    for i in range(5):
        assert m.null_kernel(0.0005, now=10 + i) is NodeState.PARTIAL
    assert m.null_kernel(0.0005, now=15) is NodeState.FULL
    assert m.null_kernel(0.005, now=16) is NodeState.PARTIAL  # the host still comes first
    assert m.need_full == 12
    full_stint(m, 20, 12, 1.0)
    assert m.need_full == 12  # capped at full_after x backoff_max
    assert full_stint(m, 40, 12, 30.0) is NodeState.PARTIAL
    assert m.need_full == 3  # a stint that lasted resets the run


def test_hysteresis_cuts_transitions_of_a_jittery_null_kernel():
    """Null-kernel times that cross alpha now and then (a loaded CPU) flip the paper's machine
    at every spike; with the back-off the flips become rare and the host still wins each one."""
    import random
    rng = random.Random(15)
    ks = [0.0012 if rng.random() < 0.2 else 0.0008 for _ in range(600)]
    paper = machine(alpha=0.001, backoff_max=1)
    damped = machine(alpha=0.001)
    for i, k in enumerate(ks):
        a, b = paper.null_kernel(k, now=i * 0.1), damped.null_kernel(k, now=i * 0.1)
        if k >= 0.001:
            assert a is b is NodeState.PARTIAL
    assert damped.transitions * 3 < paper.transitions


def test_screensaver_baseline_has_no_partial_state():
    m = machine()
    assert m.screensaver(False) is NodeState.BUSY
    assert m.screensaver(True) is NodeState.FULL


def test_host_contexts_reads_the_table_by_its_header(tmp_path):
    proc = tmp_path / "proc" / "gdev"
    proc.mkdir(parents=True)
    (proc / "contexts").write_text(
        f"cid extra pid vgpu memory\n1 x 4242 0 2097152\n2 x {os.getpid()} 0 999\n"
        "3 x 77 1 4096\n")
    assert host_contexts(str(tmp_path)) == [(4242, 2097152), (77, 4096)]
    cpu, vram = HostProbe(str(tmp_path)).sample()
    assert vram == 2097152 + 4096 and cpu == 0.0
    with pytest.raises(ValueError):
        HostProbe(str(tmp_path), cpu_source="mouse")


def test_parse_trace_and_report():
    assert parse_trace("# c\n2 idle\n0.5 busy # game\n\n3 interactive\n") == [
        (2.0, "idle"), (0.5, "busy"), (3.0, "interactive")]
    assert parse_trace("1e-3 busy\r\n\t0.25\tidle  \r\n") == [(0.001, "busy"), (0.25, "idle")]
    report = {"idle": {"ticks": 0, "on_time": 0}, "interactive": {"ticks": 10, "on_time": 9},
              "busy": {"ticks": 10, "on_time": 10}}
    assert frame_rate_kept(report) == pytest.approx(0.95)


@pytest.mark.parametrize("text, why", [
    ("2 sleeping", "line 1: unknown activity 'sleeping'"),
    ("2 Idle", "line 1: unknown activity 'Idle'"),
    ("x idle", "line 1: SECONDS is not a number: 'x'"),
    ("0 idle", "line 1: SECONDS must be above 0"),
    ("-1 idle", "line 1: SECONDS must be above 0"),
    ("nan idle", "line 1: SECONDS must be above 0"),
    ("inf busy", "line 1: SECONDS must be above 0"),
    ("1e9 busy", "line 1: SECONDS must be above 0 and at most"),
    ("1 idle extra", "line 1: want 'SECONDS idle|interactive|busy'"),
    ("idle", "line 1: want 'SECONDS"),
    ("1 idle\n# ok\n2,5 busy", "line 3: SECONDS is not a number: '2,5'"),
    ("1 " + "busy" * 80, "line 1: longer than 256 characters"),
    ("", "no periods"),
    ("# only a comment\n\n", "no periods"),
])
def test_malformed_traces_are_refused_with_the_line_and_the_reason(text, why):
    with pytest.raises(TraceError, match=re.escape(why)):
        parse_trace(text, "t.trace")


def test_trace_files_that_cannot_be_read(tmp_path):
    bad = tmp_path / "latin1.trace"
    bad.write_bytes(b"1 idle # caf\xe9\n")
    with pytest.raises(TraceError, match="cannot read the trace"):
        read_trace(str(bad))
    with pytest.raises(TraceError, match="cannot read the trace"):
        read_trace(str(tmp_path / "missing.trace"))
    good = tmp_path / "ok.trace"
    good.write_text("2 busy\n")
    assert read_trace(str(good)) == [(2.0, "busy")]


def test_the_host_refuses_a_bad_trace_before_touching_the_mount(tmp_path):
    trace = tmp_path / "bad.trace"
    trace.write_text("1 idle\n2 dancing\n")
    done = subprocess.run([sys.executable, "-m", "libgdev.grid.host", str(tmp_path / "nomount"),
                           str(trace)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert f"{trace} line 2: unknown activity 'dancing'" in done.stderr


def test_matmul_pieces_cover_every_row_once():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 1 << 32, (37, 20), dtype=np.uint32)
    b = rng.integers(0, 1 << 32, (20, 9), dtype=np.uint32)
    pieces = matmul_pieces(a, b, rows=16)
    assert [p.piece_id for p in pieces] == [0, 1, 2]
    blocks = [p.args[0].array for p in pieces]
    assert np.array_equal(np.concatenate(blocks), a)
    assert isinstance(pieces[0].args[1], In) and isinstance(pieces[0].args[2], Out)
    assert pieces[2].args[2].shape == (5, 9) and pieces[2].grid == (1, 1, 1)
    want = (a.astype(np.uint64) @ b.astype(np.uint64)) % (1 << 32)
    assert np.array_equal(reference(a, b), want.astype(np.uint32))
    with pytest.raises(ValueError):
        matmul_pieces(a, a, 16)


def test_status_table_totals():
    nodes = {"tcp://a:1": {"name": "0", "state": "busy", "pieces": 3, "pieces_per_s": 0.5,
                           "frames_kept": None},
             "tcp://b:1": {"name": "1", "state": "fully-idle", "pieces": 7, "pieces_per_s": 1.0,
                           "frames_kept": 0.97}}
    text = format_table(nodes)
    head, a, b = (line.split() for line in text.splitlines()[:3])
    assert a[:3] == ["tcp://a:1", "0", "busy"]
    assert a[head.index("frames_kept")] == "-" and b[head.index("frames_kept")] == "0.97"
    assert text.splitlines()[-1] == ("nodes 2: 1 fully idle, 0 partially idle, 1 busy; "
                                     "guest pieces 10 (1.50/s)")


def test_guest_threads_are_niced_once_and_alone():
    import threading

    from libgdev.grid.context import GUEST_NICE, nice_guest_thread

    main = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    seen = []

    def guest():
        nice_guest_thread()
        nice_guest_thread()
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))

    t = threading.Thread(target=guest)
    t.start()
    t.join()
    assert seen == [max(main, GUEST_NICE)]
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == main


def test_pieces_come_less_often_while_the_host_draws(tmp_path):
    """The duty-cycle guard (node.py): while the host's frame counter moves, piece starts are
    at least piece time / share apart (and 1/F in the periodic mode); otherwise continuous
    pieces follow at once. Checked on the slot bookkeeping, not on a clock."""
    import time

    from libgdev.grid.budget import write_frames
    from libgdev.grid.node import Node

    frames = str(tmp_path / "frames")
    node = Node(str(tmp_path), frames_file=frames, thresholds=Thresholds(fps=30))
    node.piece_s = 0.02
    before = time.monotonic()
    node._wait_slot(periodic=False)
    assert node._next_slot <= time.monotonic()              # nobody draws: back to back
    node._wait_slot(periodic=True)
    assert node._next_slot >= before + 1 / 30               # periodic: 1/F apart
    node._next_slot = 0.0
    write_frames(frames, 0, 0, 0)
    node._watch_frames(guests_ran=True)
    write_frames(frames, 3, 3, 0)
    node._watch_frames(guests_ran=True)                     # the counter moved: drawing
    before = time.monotonic()
    node._wait_slot(periodic=False)
    assert node._next_slot >= before + 0.02 / node.budget.share  # 67 ms for a 20 ms piece
