"""Adaptive piece sizes: each node's next piece takes about its budget P (budget.py).

Work that divides along one axis (rows of a matrix product, items of a batch) is cut on the
client as it is handed out, so every piece can have the size that suits the node it goes to.
A node reports, with every piece, the time the piece took and its current P; the client sizes
the next piece for that node:

    units' = units * (TARGET * P) / seconds,  at most GROW x the size held, at least 1,
                                              at most ``most``

With seconds = a + b * units (a fixed cost per piece, b per unit) the sizes converge to the
one that takes TARGET * P, or to one unit where even that takes longer (nothing smaller can be
run). Growth is bounded so one fast outlier cannot overshoot; shrinking is immediate, so a
loaded node or a host missing frames (a smaller P) gets small pieces at once. Pure logic.
"""

from __future__ import annotations

from dataclasses import dataclass, field

TARGET = 0.8  # aim below P: piece times jitter on a shared CPU
GROW = 2.0


@dataclass
class NodeSize:
    """One node's current piece size (units) and what it last reported."""

    units: float
    budget_s: float = 0.0
    seconds: float = 0.0
    samples: int = 0


@dataclass
class PieceSizer:
    """Piece sizes per node (by worker address), from ``first`` units up to ``most``."""

    first: int = 1
    most: int = 1 << 20
    nodes: dict[str, NodeSize] = field(default_factory=dict)

    def units(self, node: str) -> int:
        """How many units the next piece for ``node`` should hold (at least 1)."""
        size = self.nodes.get(node)
        return max(1, min(int(size.units if size else self.first), self.most))

    def observe(self, node: str, units: int, seconds: float, budget_s: float) -> None:
        """A piece of ``units`` took ``seconds`` on ``node``, whose budget is ``budget_s``."""
        size = self.nodes.setdefault(node, NodeSize(float(self.first)))
        size.budget_s, size.seconds, size.samples = budget_s, seconds, size.samples + 1
        if units < 1 or seconds <= 0 or budget_s <= 0:
            return
        fit = units * TARGET * budget_s / seconds
        # Growth is bounded from the larger of the size measured and the size held: a short
        # remainder piece (its fixed cost makes ``fit`` too large) moves the size by GROW at most.
        size.units = max(1.0, min(fit, GROW * max(units, size.units), float(self.most)))
