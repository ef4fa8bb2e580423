"""Wait queues: priority order, hand-off, cancellation, closing, policy switches."""

from __future__ import annotations

import errno

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from gdevd import runtime as rt
from gdevd.errors import GdevError
from gdevd.runtime.sched import COMPUTE, MEMORY
from gdevd.runtime.sched.state import UtilWindow

from .sim import run


async def _arrive_all(sched, holder, waiters, order):  # type: ignore[no-untyped-def]
    """``holder`` holds the engine while ``waiters`` arrive in list order; record grants."""
    await sched.begin(holder, COMPUTE)

    async def one(h: rt.Handle) -> None:
        await sched.begin(h, COMPUTE)
        order.append(h.cid)
        await trio.sleep(1e-3)
        sched.end(h, COMPUTE)
    async with trio.open_nursery() as n:
        for h in waiters:
            n.start_soon(one, h)
            await trio.sleep(1e-4)          # arrival order is list order
        sched.end(holder, COMPUTE)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=8))
def test_waiters_are_dispatched_by_priority_then_arrival(prios: list[int]) -> None:
    """Model: the dispatch order is the arrivals sorted by (-priority, arrival)."""
    async def body(s: rt.GdevSystem) -> tuple[list[int], list[int]]:
        s.scheduler.set_policy("fifo")
        holder = await rt.gopen(s, 0)
        hs = [await rt.gopen(s, 0) for _ in prios]
        for h, p in zip(hs, prios, strict=True):
            s.scheduler.entity(h).prio.override = p
        order: list[int] = []
        await _arrive_all(s.scheduler, holder, hs, order)
        model = [h.cid for _, _, h in sorted((-p, i, h) for i, (p, h) in
                                             enumerate(zip(prios, hs, strict=True)))]
        return order, model
    order, model = run(body)
    assert order == model


def test_a_cancelled_waiter_leaves_the_queue_and_others_proceed() -> None:
    async def body(s: rt.GdevSystem) -> list[int]:
        sched = s.scheduler
        holder, a, b = [await rt.gopen(s, 0) for _ in range(3)]
        await sched.begin(holder, COMPUTE)
        order: list[int] = []
        with trio.move_on_after(1e-3):
            await sched.begin(a, COMPUTE)
        async with trio.open_nursery() as n:
            async def go() -> None:
                await sched.begin(b, COMPUTE)
                order.append(b.cid)
                sched.end(b, COMPUTE)
            n.start_soon(go)
            await trio.sleep(1e-3)
            assert len(sched.vres(s.virtual[0], COMPUTE).queue) == 1
            sched.end(holder, COMPUTE)
        assert sched.entity(a).instances[COMPUTE] == 0
        return order
    assert run(body) == [3]


def test_a_context_closed_while_waiting_gets_ecanceled_and_releases() -> None:
    async def body(s: rt.GdevSystem) -> None:
        sched = s.scheduler
        holder, a = await rt.gopen(s, 0), await rt.gopen(s, 0)
        await sched.begin(holder, COMPUTE)
        async with trio.open_nursery() as n:
            async def go() -> None:
                with pytest.raises(GdevError) as info:
                    await sched.begin(a, COMPUTE)
                assert info.value.errno == errno.ECANCELED
            n.start_soon(go)
            await trio.sleep(1e-3)
            a.closed = True
            sched.end(holder, COMPUTE)
        a.closed = False
        assert sched.pres(0, COMPUTE).current is None
    run(body)


def test_switching_to_null_releases_every_waiter() -> None:
    async def body(s: rt.GdevSystem) -> int:
        sched = s.scheduler
        holder = await rt.gopen(s, 0)
        others = [await rt.gopen(s, i % 4) for i in range(5)]
        await sched.begin(holder, MEMORY)
        granted = 0
        async with trio.open_nursery() as n:
            async def go(h: rt.Handle) -> None:
                nonlocal granted
                await sched.begin(h, MEMORY)
                granted += 1
                sched.end(h, MEMORY)
            for h in others:
                n.start_soon(go, h)
            await trio.sleep(1e-3)
            assert granted == 0
            sched.set_policy("null")
        sched.end(holder, MEMORY)
        return granted
    assert run(body) == 5


def test_unknown_policy_and_queueing_are_refused() -> None:
    async def body(s: rt.GdevSystem) -> None:
        for bad in ("BAND ", "rr", ""):
            with pytest.raises(GdevError):
                s.scheduler.set_policy(bad)
            with pytest.raises(GdevError):
                s.scheduler.set_queueing(bad)
        assert s.scheduler.policy.name == "band" and s.scheduler.queueing == "mrq"
    run(body)


def test_several_launches_in_flight_count_as_one_makespan() -> None:
    async def body(s: rt.GdevSystem) -> tuple[float, int]:
        sched = s.scheduler
        h = await rt.gopen(s, 0)
        for _ in range(3):
            await sched.begin(h, COMPUTE)
        await trio.sleep(0.01)
        for _ in range(3):
            sched.end(h, COMPUTE)
        u = sched.entity(h).usage
        return u.compute_s, u.launches
    busy, launches = run(body)
    assert busy == pytest.approx(0.01) and launches == 3


@given(st.lists(st.tuples(st.floats(0, 2), st.floats(0, 0.5)), max_size=20),
       st.floats(0.1, 3))
def test_util_window_matches_a_direct_sum(spans: list[tuple[float, float]],
                                          window: float) -> None:
    """Model: busy time in the window equals the clipped sum of disjoint intervals."""
    w, t, ivs = UtilWindow(), 0.0, []
    for gap, length in spans:
        s, t = t + gap, t + gap + length
        w.add(s, t)
        ivs.append((s, t))
    now = t + 0.1
    lo = now - window
    want = sum(max(0.0, e - max(s, lo)) for s, e in ivs if e > lo)
    assert w.busy(now, window) == pytest.approx(want, abs=1e-9)


def _group_arrivals(s: rt.GdevSystem, arrivals: list[rt.Handle], cancel: int | None = None):  # type: ignore[no-untyped-def]
    """``holder`` holds the engine; ``arrivals`` (one per operation, a context may come
    several times: its streams) queue in list order; the one at index ``cancel`` gives up.
    Returns the grant order as (cid, operation index) batches, one per hand-over."""
    sched = s.scheduler

    async def body() -> list[list[tuple[int, int]]]:
        holder = await rt.gopen(s, 0)
        await sched.begin(holder, COMPUTE)
        batches: list[list[tuple[int, int]]] = []
        cancels = [trio.CancelScope() for _ in arrivals]

        async def one(i: int, h: rt.Handle) -> None:
            with cancels[i]:
                await sched.begin(h, COMPUTE)
                if not batches or batches[-1][0][0] != h.cid:
                    batches.append([])
                batches[-1].append((h.cid, i))
                await trio.sleep(1e-3)
                sched.end(h, COMPUTE)
        async with trio.open_nursery() as n:
            for i, h in enumerate(arrivals):
                n.start_soon(one, i, h)
                await trio.sleep(1e-4)
            if cancel is not None:
                cancels[cancel].cancel()
                await trio.sleep(1e-4)
            assert len(sched.vres(s.virtual[0], COMPUTE).queue) == len(
                {h.cid for i, h in enumerate(arrivals) if i != cancel})
            sched.end(holder, COMPUTE)
        return [sorted(batch) for batch in batches]     # (woken in any order within one)
    return body()


def test_a_context_with_many_streams_holds_one_place_in_the_queue() -> None:
    async def body(s: rt.GdevSystem) -> tuple[list, int, int]:
        s.scheduler.set_policy("fifo")
        a, b = await rt.gopen(s, 0), await rt.gopen(s, 0)
        batches = await _group_arrivals(s, [a, a, b, a, a, b])
        return batches, a.cid, b.cid
    batches, a, b = run(body)
    # a's four operations go together (one makespan), then b's two: b is not queued behind
    # every stream of a, one turn each
    assert batches == [[(a, 0), (a, 1), (a, 3), (a, 4)], [(b, 2), (b, 5)]]


def test_a_cancelled_lead_hands_its_turn_to_its_companions() -> None:
    async def body(s: rt.GdevSystem) -> tuple[list, int, int]:
        s.scheduler.set_policy("fifo")
        a, b = await rt.gopen(s, 0), await rt.gopen(s, 0)
        batches = await _group_arrivals(s, [a, b, a, a], cancel=0)
        return batches, a.cid, b.cid
    batches, a, b = run(body)
    assert batches == [[(a, 2), (a, 3)], [(b, 1)]]


def test_companions_beyond_instances_max_queue_again_behind_others() -> None:
    async def body(s: rt.GdevSystem) -> tuple[list, int, int]:
        s.scheduler.set_policy("fifo")
        s.scheduler.instances_max = 2
        a, b = await rt.gopen(s, 0), await rt.gopen(s, 0)
        batches = await _group_arrivals(s, [a, a, a, b])
        return batches, a.cid, b.cid
    batches, a, b = run(body)
    assert batches == [[(a, 0), (a, 1)], [(b, 3)], [(a, 2)]]
