"""Random workloads against the scheduler's invariants (hypothesis + MockClock).

Whatever the policy, queueing mode, shares, priorities and timings: at most one context
holds a physical resource under an exclusive policy and it belongs to the holding vGPU; a
free resource has no waiters unless a time-buffered hand-off is pending (no lost wake-up);
every operation is granted and completes (no deadlock); the accounting adds up.
"""

from __future__ import annotations

from typing import Any

import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from gdevd import runtime as rt
from gdevd.runtime.sched import COMPUTE, MEMORY, POLICY_NAMES

from .sim import run

CLIENT = st.tuples(st.integers(0, 3), st.sampled_from([COMPUTE, MEMORY]),
                   st.integers(1, 30), st.integers(0, 5), st.integers(1, 12),
                   st.integers(0, 40))


def check(sched: Any, s: rt.GdevSystem) -> None:
    """The invariants of the module docstring, at one instant."""
    for p in sched._pres.values():
        if not sched.policy.exclusive:
            continue
        if p.current is not None:
            assert p.current.current is not None and p.current in p.order
        elif p.buffering is None:          # no time-buffered hand-off pending
            assert all(len(v.queue) == 0 for v in p.order), "a waiter was left behind"
        holders = [v for v in p.order if v.current is not None]
        assert len(holders) <= 1 and (not holders or holders[0] is p.current)


@settings(max_examples=25, deadline=None)
@given(st.lists(CLIENT, min_size=1, max_size=6), st.sampled_from(POLICY_NAMES),
       st.sampled_from(["mrq", "sdq"]), st.lists(st.integers(0, 100), min_size=4,
                                                  max_size=4))
def test_random_workloads_keep_the_invariants(clients: list[tuple[Any, ...]], policy: str,
                                              queueing: str, shares: list[int]) -> None:
    async def body(s: rt.GdevSystem) -> None:
        sched = s.scheduler
        sched.set_policy(policy)
        sched.set_queueing(queueing)
        for v, share in zip(s.virtual, shares, strict=True):
            v.compute_bandwidth = v.memory_bandwidth = share
        done: list[int] = []

        async def client(vd: int, kind: str, ms: int, gap: int, count: int, prio: int) -> None:
            h = await rt.gopen(s, vd)
            sched.entity(h).prio.override = prio
            for _ in range(count):
                await sched.begin(h, kind)
                check(sched, s)
                await trio.sleep(ms * 1e-3)
                sched.end(h, kind)
                check(sched, s)
                await trio.sleep(gap * 1e-3)
            done.append(count)
        with trio.fail_after(3600):
            async with trio.open_nursery() as n:
                for c in clients:
                    n.start_soon(client, *c)
        assert sorted(done) == sorted(c[4] for c in clients)
        ops = sum(se.usage.launches + se.usage.copies for _, se in sched.entities())
        assert ops == sum(c[4] for c in clients)
        busy = sum(se.usage.compute_s + se.usage.copy_s for _, se in sched.entities())
        assert busy >= sum(c[2] * c[4] for c in clients) * 1e-3 - 1e-9
        await trio.sleep(1.0)                   # any pending hand-off has run
        for p in sched._pres.values():
            assert p.current is None and all(len(v.queue) == 0 for v in p.order)
    run(body)
