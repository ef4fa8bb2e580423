"""The virtual-GPU policies: BAND (default), Credit, FIFO and NULL, behind one interface.

A policy decides three things and holds no state of its own (everything lives in the
:class:`~.state.VRes`/:class:`~.state.PRes` records, so a switch at run time is one
assignment):

``arrival_delay(sched, vres, now)``
    seconds a vGPU must wait before competing for a free resource (BAND's time buffering
    on arrival: an over-share vGPU lets the others arrive first), 0 for none;
``on_complete(sched, pres, vres, now)``
    the vGPU ``vres`` just released the resource: demote it (move it to the tail) or not;
``handoff_delay(sched, pres, released, nxt, now)``
    seconds to hold the free resource before giving it to ``nxt`` (BAND's time buffering on
    completion: if ``nxt`` is over its share, the vGPU that just finished may re-arrive and
    take it first), 0 for at once.

``exclusive`` says whether contexts of different vGPUs are serialised on the physical
resource (all but NULL) and ``replenishes`` whether credit is replenished each period.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .state import PRes, VRes

if TYPE_CHECKING:
    from .scheduler import Scheduler


class Policy:
    """The interface (and FIFO-like defaults) shared by every vGPU policy."""

    name = "base"
    exclusive = True
    replenishes = False

    def arrival_delay(self, sched: Scheduler, vres: VRes, now: float) -> float:
        """Seconds ``vres`` waits before competing for a free resource (0: none)."""
        return 0.0

    def on_complete(self, sched: Scheduler, pres: PRes, vres: VRes, now: float) -> None:
        """``vres`` released ``pres``: reorder the vGPUs (default: no change)."""

    def handoff_delay(self, sched: Scheduler, pres: PRes, released: VRes, nxt: VRes,
                      now: float) -> float:
        """Seconds to keep ``pres`` free before handing it to ``nxt`` (0: at once)."""
        return 0.0

    def gates_direct(self, sched: Scheduler, vres: VRes, now: float) -> bool:
        """Whether a direct copy of ``vres`` is time-buffered (``band_wait``) before it runs
        (default, FIFO: never; direct copies do not take part in the round robin)."""
        return False

    def yields(self, sched: Scheduler, holder: VRes, waiter: VRes, now: float) -> bool:
        """Whether a launch of ``holder`` whose slice expired yields the engine to a waiter
        of ``waiter`` (preempt.py; default: always, a round robin of slices)."""
        return True


class NullPolicy(Policy):
    """No virtual-GPU arbitration: launches and copies go straight to the engines (whose own
    order is FIFO); only the accounting runs.  The 'without scheduling' baseline."""

    name = "null"
    exclusive = False


class FifoPolicy(Policy):
    """Round robin among vGPUs with waiting contexts: the releasing vGPU always goes last."""

    name = "fifo"

    def on_complete(self, sched: Scheduler, pres: PRes, vres: VRes, now: float) -> None:
        """Always demote the vGPU that just ran."""
        pres.move_to_tail(vres)


class CreditPolicy(Policy):
    """Xen's Credit, ported as Gdev does: a vGPU out of credit goes to the tail."""

    name = "credit"
    replenishes = True

    def on_complete(self, sched: Scheduler, pres: PRes, vres: VRes, now: float) -> None:
        """Demote the vGPU that just ran if its credit is exhausted."""
        if vres.credit <= 0:
            pres.move_to_tail(vres)


    def gates_direct(self, sched: Scheduler, vres: VRes, now: float) -> bool:
        """Gate a vGPU's direct copies once it is out of credit while another is active."""
        sched.replenish(vres, now)
        return vres.credit <= 0 and not sched.alone(vres, now)


class BandPolicy(CreditPolicy):
    """BAND, Gdev's bandwidth-aware non-preemptive policy (paper section 5.2).

    Demotion needs *both* exhausted credit and measured utilisation above the share (credit
    alone misjudges non-preemptive bursts), and the time buffering (``band_wait``) lets a
    vGPU with short bursts re-arrive before an over-share vGPU with long bursts takes the
    engine.  A vGPU that is alone (no other vGPU active within the last period) is never
    delayed, and shares are compared among the active vGPUs only
    (:meth:`~.scheduler.Scheduler.effective_share`), so an idle vGPU's share is used by the
    others in proportion to their own shares (the original compares against the nominal
    share, which leaves the idle shares unused once every active vGPU exceeds its own).
    """

    name = "band"

    def over(self, sched: Scheduler, vres: VRes, now: float) -> bool:
        """Whether ``vres`` used more than its share: credit out and utilisation above its
        share among the active vGPUs."""
        return vres.credit <= 0 and \
            sched.utilisation(vres, now) > sched.effective_share(vres, now)

    def arrival_delay(self, sched: Scheduler, vres: VRes, now: float) -> float:
        """Time-buffer an over-share vGPU's arrival while another vGPU is active."""
        if not sched.alone(vres, now) and self.over(sched, vres, now):
            return sched.band_wait
        return 0.0

    def on_complete(self, sched: Scheduler, pres: PRes, vres: VRes, now: float) -> None:
        """Demote the vGPU that just ran only if it is over its share (and not alone)."""
        if not sched.alone(vres, now) and self.over(sched, vres, now):
            pres.move_to_tail(vres)

    def gates_direct(self, sched: Scheduler, vres: VRes, now: float) -> bool:
        """Gate a vGPU's direct copies while it is over its share and not alone."""
        sched.replenish(vres, now)
        return vres.credit <= 0 and not sched.alone(vres, now) and \
            self.over(sched, vres, now)

    def yields(self, sched: Scheduler, holder: VRes, waiter: VRes, now: float) -> bool:
        """The engine goes to a waiting vGPU only if it is within its share (the share
        deficit decides, not the turn); among vGPUs all over their shares the holder
        keeps it (work conserving) until a waiter's credit comes back."""
        return holder is waiter or not self.over(sched, waiter, now)

    def handoff_delay(self, sched: Scheduler, pres: PRes, released: VRes, nxt: VRes,
                      now: float) -> float:
        """Hold the engine ``band_wait`` when the next vGPU is over its share."""
        if nxt is not released and \
                sched.utilisation(nxt, now) > sched.effective_share(nxt, now):
            return sched.band_wait
        return 0.0


POLICIES: dict[str, type[Policy]] = {
    p.name: p for p in (BandPolicy, CreditPolicy, FifoPolicy, NullPolicy)
}
POLICY_NAMES = tuple(POLICIES)
