"""Adaptive piece sizes, the piece budget P that follows the host's frames, and the job's
partition of units: pure logic, no daemon."""

from __future__ import annotations

import random

import pytest

from libgdev.grid.budget import WINDOW_TICKS, Budget, FrameMeter, kept, read_frames, write_frames
from libgdev.grid.job import Job
from libgdev.grid.sizing import GROW, TARGET, PieceSizer


def piece_time(units: int, fixed: float = 0.002, per_unit: float = 0.0005) -> float:
    return fixed + per_unit * units


def converge(sizer: PieceSizer, budget_s: float, steps: int = 30, **cost) -> int:
    for _ in range(steps):
        u = sizer.units("n")
        sizer.observe("n", u, piece_time(u, **cost), budget_s)
    return sizer.units("n")


def test_sizes_converge_to_the_budget_from_measured_times():
    sizer = PieceSizer(first=1)
    u = converge(sizer, budget_s=0.010)
    assert piece_time(u) <= TARGET * 0.010 < piece_time(u + 2)  # the largest that fits


def test_growth_is_bounded_and_shrinking_immediate():
    sizer = PieceSizer(first=4)
    sizer.observe("n", 4, 1e-6, 0.010)       # an absurdly fast outlier
    assert sizer.units("n") == 4 * GROW
    sizer.observe("n", 8, 0.100, 0.010)      # a slow piece: ten times the budget
    assert sizer.units("n") == 1
    sizer.observe("n", 1, 0.050, 0.010)      # even one unit is too long: one unit it is
    assert sizer.units("n") == 1


def test_a_smaller_budget_gives_smaller_pieces_and_nodes_are_sized_apart():
    big, small = PieceSizer(), PieceSizer()
    assert converge(big, 0.020) > converge(small, 0.005) >= 1
    slow = PieceSizer()
    converge(slow, 0.010)
    for _ in range(30):
        u = slow.units("slow")
        slow.observe("slow", u, piece_time(u, per_unit=0.002), 0.010)
    assert slow.units("slow") < slow.units("n")
    assert PieceSizer(most=3).units("x") == 1 and PieceSizer(first=9, most=3).units("x") == 3


def test_reports_without_a_time_or_budget_change_nothing():
    sizer = PieceSizer(first=5)
    for seconds, budget in ((0.0, 0.01), (0.01, 0.0)):
        sizer.observe("n", 5, seconds, budget)
    assert sizer.units("n") == 5


def test_frames_file_round_trip_and_bad_contents(tmp_path):
    path = str(tmp_path / "frames")
    assert read_frames(path) is None
    write_frames(path, 30, 29, 1.5)
    assert read_frames(path) == (30, 29)
    for bad in ("", "30", "30 31 1", "x 1 1", "-1 -1 1", "3 2 1 extra"):
        (tmp_path / "frames").write_text(bad)
        assert read_frames(path) is None, bad


def test_frame_meter_counts_with_guests_apart_and_survives_a_restart():
    m = FrameMeter()
    m.feed((0, 0), False, now=0)
    m.feed((30, 30), False, now=1)
    m.feed((60, 50), True, now=2)
    assert m.total == [60, 50] and m.with_guests == [30, 20]
    assert kept(m.with_guests) == pytest.approx(2 / 3) and kept([0, 0]) is None
    m.feed((5, 5), True, now=3)              # the host restarted: a new baseline
    assert m.total == [60, 50]
    m.feed(None, True, now=4)
    assert m.drawing(3.2, 0.5) and not m.drawing(4, 0.5)


def test_budget_halves_while_frames_are_missed_with_guests_and_recovers():
    b, m = Budget(fps=30, share=0.3), FrameMeter()
    ticks = on_time = 0
    m.feed((0, 0), False)
    for _ in range(3):                        # 80 % of frames kept while guests run
        ticks, on_time = ticks + WINDOW_TICKS, on_time + int(WINDOW_TICKS * 0.8)
        m.feed((ticks, on_time), True)
        b.judge(m)
    assert b.share == b.min_share == 0.05    # 0.15, 0.075, then the floor
    assert b.shrinks == 3 and b.piece_s == pytest.approx(b.share / 30)
    low = b.share
    ticks, on_time = ticks + WINDOW_TICKS, on_time + int(WINDOW_TICKS * 0.8)
    m.feed((ticks, on_time), False)           # frames missed without guests: not theirs
    b.judge(m)
    assert b.share >= low and b.shrinks == 3  # (it kept its own rate alone: P may grow)
    for _ in range(200):                      # every frame kept: back to the start, no more
        ticks, on_time = ticks + WINDOW_TICKS, on_time + WINDOW_TICKS
        m.feed((ticks, on_time), True)
        b.judge(m)
    assert b.share == pytest.approx(0.3)


def test_budget_never_below_its_floor():
    b, m = Budget(share=0.3, min_share=0.05), FrameMeter()
    m.feed((0, 0), True)
    for i in range(1, 20):
        m.feed((i * WINDOW_TICKS, 0), True)
        b.judge(m)
    assert b.share == 0.05


def test_job_splits_ranges_to_the_size_asked_and_keeps_each_once():
    job = Job(10, lambda s, c: (print, (s, c)), splittable=True)
    s1, c1, (fn, args) = job.take(4)
    assert (s1, c1, args) == (0, 4, (0, 4)) and fn is print
    job.inflight["a"] = (s1, c1, "w")
    s2, c2, _ = job.take(100)
    assert (s2, c2) == (4, 6) and not job.todo
    job.inflight["b"] = (s2, c2, "w")
    job.check()
    del job.inflight["b"]
    job.give_back(s2, c2)                     # interrupted: back in line, cut again later
    s3, c3, _ = job.take(2)
    assert (s3, c3) == (4, 2) and list(job.todo) == [(6, 4)]
    assert job.attempts[4] == 2
    job.inflight["c"] = (s3, c3, "w")
    job.check()
    del job.inflight["a"]
    assert job.keep(0, 4, "r0") and not job.keep(0, 4, "again")
    assert not job.done
    job.check()


def test_job_of_fixed_pieces_never_splits_and_an_empty_job_is_done():
    job = Job(3, lambda s, c: (None, (s,)))
    assert [job.take(50)[:2] for _ in range(3)] == [(0, 1), (1, 1), (2, 1)]
    assert Job(0, lambda s, c: (None, ()), splittable=True).done
    with pytest.raises(ValueError):
        Job(-1, lambda s, c: (None, ()))


def test_job_partition_holds_under_random_interruptions():
    """A model run: random sizes, random interruptions and completions; every unit ends with
    exactly one result and the partition holds at every step."""
    rng = random.Random(7)
    job = Job(200, lambda s, c: (None, (s, c)), splittable=True)
    flying: list = []
    while not job.done:
        if job.todo and (not flying or rng.random() < 0.6):
            s, c, _ = job.take(rng.randint(1, 30))
            flying.append((s, c))
            job.inflight[(s, c, len(flying))] = (s, c, "w")
        else:
            s, c = flying.pop(rng.randrange(len(flying)))
            key = next(k for k, v in job.inflight.items() if v[:2] == (s, c))
            del job.inflight[key]
            if rng.random() < 0.3:
                job.give_back(s, c)
            else:
                assert job.keep(s, c, list(range(s, s + c)))
        job.check()
    units = [u for _, _, v in job.ordered() for u in v]
    assert units == list(range(200))


def test_budget_bar_is_relative_to_the_hosts_frames_without_guests():
    """A host that keeps 80 % of F alone (a loaded machine): guests costing it 2 % more keep
    their budget; guests costing it 10 % more lose half of it."""
    b, m = Budget(share=0.3), FrameMeter()
    m.feed((0, 0), False)
    m.feed((4 * WINDOW_TICKS, int(3.2 * WINDOW_TICKS)), False)   # alone: 80 %
    assert m.alone() == pytest.approx(0.8)
    m.restart_window()
    ticks, on_time = m.last
    m.feed((ticks + 100, on_time + 78), True)                     # with guests: 78 %
    b.judge(m)
    assert b.share == 0.3 and b.shrinks == 0
    m.feed((ticks + 200, on_time + 78 + 70), True)                # with guests: 70 %
    b.judge(m)
    assert b.share == 0.15 and b.shrinks == 1
    assert FrameMeter().alone() == 1.0                            # unmeasured: F is the bar
