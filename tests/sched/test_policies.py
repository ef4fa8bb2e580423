"""The vGPU policies' logic under a deterministic clock (tests/sched/sim.py)."""

from __future__ import annotations

import pytest
import trio

from gdevd import runtime as rt
from gdevd.runtime.sched import COMPUTE, MEMORY

from .sim import client, run, set_shares, shares


def _short_long(policy: str, seconds: float = 6.0) -> list[float]:
    """Two vGPUs at 50/50, 1 ms kernels against 10 ms kernels: busy-time shares."""
    async def body(s: rt.GdevSystem) -> list[float]:
        await set_shares(s, [50, 50])
        s.scheduler.set_policy(policy)
        a, b = await rt.gopen(s, 0), await rt.gopen(s, 1)
        async with trio.open_nursery() as n:
            n.start_soon(client, s.scheduler, a, 1e-3, seconds)
            n.start_soon(client, s.scheduler, b, 10e-3, seconds)
        return shares(s.scheduler, [a, b])
    return run(body)  # type: ignore[no-any-return]


def test_band_keeps_short_and_long_bursts_at_their_shares() -> None:
    short, long = _short_long("band")
    assert abs(short - 50) < 3 and abs(long - 50) < 3


@pytest.mark.parametrize("policy", ["fifo", "credit"])
def test_fifo_and_credit_favour_long_bursts(policy: str) -> None:
    """Non-preemptive bursts defeat round robin and Credit (the paper's Fig. 14)."""
    short, long = _short_long(policy)
    assert long > 80


def test_band_enforces_unequal_shares_of_back_to_back_launches() -> None:
    async def body(s: rt.GdevSystem) -> list[float]:
        await set_shares(s, [10, 90])
        a, b = await rt.gopen(s, 0), await rt.gopen(s, 1)
        async with trio.open_nursery() as n:
            n.start_soon(client, s.scheduler, a, 5e-3, 5.0)
            n.start_soon(client, s.scheduler, b, 5e-3, 5.0)
        return shares(s.scheduler, [a, b])
    small, big = run(body)
    assert abs(small - 10) < 3 and abs(big - 90) < 3


def test_a_vgpu_alone_is_never_throttled_and_idle_shares_are_used() -> None:
    """Work conservation: a 10% vGPU alone keeps the engine busy all the time."""
    async def body(s: rt.GdevSystem) -> float:
        await set_shares(s, [10, 90])
        a = await rt.gopen(s, 0)
        await rt.gopen(s, 1)                       # open but idle
        t0 = trio.current_time()
        await client(s.scheduler, a, 2e-3, t0 + 2.0, gap=0)
        return s.scheduler.entity(a).usage.compute_s / (trio.current_time() - t0)
    assert run(body) > 0.99


def test_mrq_enforces_compute_and_copy_shares_separately() -> None:
    """MRQ: compute of one vGPU overlaps copies of another (sum above 100%); SDQ cannot."""
    def busy(queueing: str) -> float:
        async def body(s: rt.GdevSystem) -> float:
            s.scheduler.set_queueing(queueing)
            a, b = await rt.gopen(s, 0), await rt.gopen(s, 1)
            async with trio.open_nursery() as n:
                n.start_soon(client, s.scheduler, a, 3e-3, 2.0, COMPUTE)
                n.start_soon(client, s.scheduler, b, 3e-3, 2.0, MEMORY)
            ua, ub = s.scheduler.entity(a).usage, s.scheduler.entity(b).usage
            return (ua.compute_s + ub.copy_s + ub.compute_s) / 2.0
        return run(body)  # type: ignore[no-any-return]
    assert busy("mrq") > 1.9
    assert busy("sdq") < 1.01


def test_four_vgpus_staggered_get_fair_shares_of_what_is_active() -> None:
    async def body(s: rt.GdevSystem) -> list[float]:
        hs = [await rt.gopen(s, i) for i in range(4)]
        async with trio.open_nursery() as n:
            for i, h in enumerate(hs):
                n.start_soon(_late, s.scheduler, h, (1 + i) * 2e-3, i * 1.0, 6.0)
        # over the last two seconds all four ran: each about a quarter
        return [s.scheduler.vres(v, COMPUTE).usage.compute_s for v in s.virtual]
    busy = run(body)
    assert busy[0] > busy[1] > busy[2] > busy[3] > 0


async def _late(sched, h, length, start, until):  # type: ignore[no-untyped-def]
    await trio.sleep(start)
    await client(sched, h, length, until)


def test_live_compute_bandwidth_changes_take_effect() -> None:
    async def body(s: rt.GdevSystem) -> tuple[list[float], list[float]]:
        await set_shares(s, [50, 50])
        a, b = await rt.gopen(s, 0), await rt.gopen(s, 1)
        async with trio.open_nursery() as n:
            n.start_soon(client, s.scheduler, a, 2e-3, 8.0)
            n.start_soon(client, s.scheduler, b, 2e-3, 8.0)
            await trio.sleep(4.0)
            first = shares(s.scheduler, [a, b])
            ua0 = s.scheduler.entity(a).usage.compute_s
            ub0 = s.scheduler.entity(b).usage.compute_s
            await set_shares(s, [20, 80])
        ua = s.scheduler.entity(a).usage.compute_s - ua0
        ub = s.scheduler.entity(b).usage.compute_s - ub0
        return first, [100 * ua / (ua + ub), 100 * ub / (ua + ub)]
    first, second = run(body)
    assert abs(first[0] - 50) < 3
    assert second[0] < 35          # the window needs ~1 s to follow the new share


def test_utilisation_is_reported_over_the_window() -> None:
    async def body(s: rt.GdevSystem) -> tuple[int, int, int]:
        await set_shares(s, [50, 50])
        a = await rt.gopen(s, 0)
        await client(s.scheduler, a, 1e-3, trio.current_time() + 2.0, gap=1e-3)
        busy = s.virtual[0].compute_bandwidth_used
        await trio.sleep(s.scheduler.window + 0.1)
        return busy, s.virtual[0].compute_bandwidth_used, s.virtual[0].memory_bandwidth_used
    busy, idle, copies = run(body)
    assert 45 <= busy <= 55 and idle == 0 and copies == 0


def test_idle_shares_go_to_the_active_vgpus_in_proportion() -> None:
    """Two of four 25% vGPUs busy: each gets about half the engine, not a quarter."""
    async def body(s: rt.GdevSystem) -> list[float]:
        a, b = await rt.gopen(s, 0), await rt.gopen(s, 3)
        for i in (1, 2):
            await rt.gopen(s, i)                  # open, idle
        t0 = trio.current_time()
        async with trio.open_nursery() as n:
            n.start_soon(client, s.scheduler, a, 1e-3, t0 + 3.0)
            n.start_soon(client, s.scheduler, b, 8e-3, t0 + 3.0)
        wall = trio.current_time() - t0
        return [s.scheduler.entity(h).usage.compute_s / wall * 100 for h in (a, b)]
    ua, ub = run(body)
    assert abs(ua - 50) < 4 and abs(ub - 50) < 4


def test_a_debt_beyond_one_period_is_kept_at_one_period_not_forgiven() -> None:
    """A slice that overran by several periods (an engine stopping late) leaves the vGPU a
    debt of one period: Gdev's reset to 0 let a small share run free after every overrun."""
    async def body(s: rt.GdevSystem) -> float:
        sched = s.scheduler
        vres = sched.vres(s.virtual[0], COMPUTE)
        period = vres.period
        vres.credit = -5 * period                  # charged five periods at once
        now = trio.current_time()
        sched.replenish(vres, now + period)        # one period later
        return vres.credit / period
    assert run(body) == -1.0
