"""Compiler slots are shared fairly between tenants (gdevd/gpu/ptx/jit/slots.py): one tenant's
backlog of builds does not keep another's single build waiting behind all of it."""

from __future__ import annotations

import threading
import time

import pytest

from gdevd.gpu.ptx.jit import slots as slots_mod
from gdevd.gpu.ptx.jit.slots import FairSlots


def poll_all(slots: FairSlots, waiters: list[tuple[str, object]]) -> list[tuple[str, object]]:
    """Every waiter polls once, in order; those granted a slot, in order."""
    return [(o, t) for o, t in waiters if slots.try_acquire(o, t)]


def test_a_flooding_owner_takes_turns_with_a_later_one():
    slots = FairSlots(1)
    flood = [("A", object()) for _ in range(4)]
    assert poll_all(slots, flood) == flood[:1]          # A's first waiter runs
    victim = ("B", object())
    assert poll_all(slots, flood[1:] + [victim]) == []  # no slot free: everyone waits
    slots.release("A")
    # A's three waiters came first, but B has not been served: B goes next
    assert poll_all(slots, flood[1:] + [victim]) == [victim]
    slots.release("B")
    assert poll_all(slots, flood[1:]) == flood[1:2]     # then A again, in arrival order


def test_an_owner_holding_fewer_slots_goes_first():
    slots = FairSlots(2)
    assert slots.try_acquire("A", object()) and slots.try_acquire("A", object())
    a, b = object(), object()
    assert not slots.try_acquire("A", a)                # A waits first ...
    assert not slots.try_acquire("B", b)                # ... then B
    slots.release("A")                                  # one slot free, A still holds one
    assert not slots.try_acquire("A", a)                # A holds more than B: B's turn
    assert slots.try_acquire("B", b)
    assert (slots.held("A"), slots.held("B")) == (1, 1)


def test_a_waiter_that_stops_polling_does_not_block_the_others(monkeypatch):
    monkeypatch.setattr(slots_mod, "STALE", 0.05)
    slots = FairSlots(1)
    gone, live = object(), object()
    assert slots.try_acquire("A", object())
    assert not slots.try_acquire("A", gone)             # then its thread dies, no leave()
    assert not slots.try_acquire("B", live)
    slots.release("A")
    time.sleep(0.1)
    assert slots.try_acquire("B", live)


def test_leaving_gives_up_the_place_in_line():
    slots = FairSlots(1)
    assert slots.try_acquire("A", object())
    first, second = object(), object()
    assert not slots.try_acquire("B", first)            # B's first waiter is in line ...
    assert not slots.try_acquire("C", second)
    slots.release("A")
    slots.leave(first)                                  # ... and gives up
    assert slots.try_acquire("C", second)


def test_releasing_a_slot_never_taken_is_an_error():
    slots = FairSlots(1)
    with pytest.raises(ValueError):
        slots.release("A")


def test_threads_of_two_owners_alternate():
    """Three builds of A and one of B poll concurrently for one slot held a few ms each:
    B is served before A's third build (A's backlog does not come first)."""
    slots = FairSlots(1)
    order: list[str] = []
    lock = threading.Lock()

    def build(owner: str, start_after: float) -> None:
        time.sleep(start_after)
        ticket = object()
        while not slots.try_acquire(owner, ticket):
            time.sleep(0.001)
        with lock:
            order.append(owner)
        time.sleep(0.03)
        slots.release(owner)
    threads = [threading.Thread(target=build, args=("A", 0.0)) for _ in range(3)]
    threads.append(threading.Thread(target=build, args=("B", 0.01)))
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(order) == ["A", "A", "A", "B"]
    assert order.index("B") <= 2, order
