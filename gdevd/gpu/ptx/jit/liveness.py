"""Which registers are live where, and the registers a compiled block keeps in its loop.

Liveness is backward over the basic blocks as the executor moves the PCs; a guarded write
does not kill (lanes whose guard is false keep the old value).  Two uses:

* a kernel zeroes at block start only the registers live at its entry (a lane may read
  them before writing them), see :func:`zeroed_at_start`;
* a register that one lane loop of a block writes before reading, and that is dead at the
  block's exit and read nowhere else in the block, never needs its array: it becomes a
  local variable of that loop (:func:`promote`; MADD's thread-index temporaries), which
  saves a store and a load per lane.
"""

from __future__ import annotations

import re

from ..regalloc import defs_uses
from .uniform import successors

WARP_OPS = ("shfl", "vote", "match", "activemask", "redux", "barred")


def live_sets(blocks) -> tuple[list[set[str]], list[set[str]]]:
    """(live at entry, live at exit) of every block, by register name."""
    gen, kill = [], []
    for b in blocks:
        g: set[str] = set()
        k: set[str] = set()
        if b.term.guard is not None:
            g.add(b.term.guard[0])
        for ins in reversed(b.instrs):
            d, u = defs_uses(ins)
            if ins.guard is None:
                g -= set(d)
                k |= set(d)
            g |= set(u)
        gen.append(g)
        kill.append(k)
    succ = successors(blocks)
    live = [set(g) for g in gen]
    out: list[set[str]] = [set() for _ in blocks]
    changed = True
    while changed:
        changed = False
        for pc in reversed(range(len(blocks))):
            out[pc] = set().union(*(live[s] for s in succ[pc] if s < len(blocks)))
            new = gen[pc] | (out[pc] - kill[pc])
            if new != live[pc]:
                live[pc], changed = new, True
    return live, out


def zeroed_at_start(blocks) -> set[str]:
    """Registers a block must start with zeroed: those some lane may read before writing
    them (live at the entry of the kernel), and every source of a warp collective (it reads
    other lanes, which may not have written).  All others are written before any read, so
    their stale values are never seen."""
    warp = {r for b in blocks for ins in b.instrs if ins.opcode.startswith(WARP_OPS)
            for r in defs_uses(ins)[1]}
    return (live_sets(blocks)[0][0] if blocks else set()) | warp


# a lane loop, alone or after its declarations (which hold no braces or calls)
_LOOP = re.compile(r"(\{ [^{}()]*)?\bLOOP1?\(")
_REF = re.compile(r"\bR(\d+)\[")


def _loop_body(text: str) -> tuple[int, int] | None:
    """Start and end of the body of the lane loop ``text`` begins with, if it does."""
    m = _LOOP.match(text)
    if m is None:
        return None
    depth = 1
    for k in range(m.end(), len(text)):
        depth += {"(": 1, ")": -1}.get(text[k], 0)
        if depth == 0:
            return m.end(), k
    return None


def promote(parts: list[str], term: str, dead: set[int], ctypes: list[str]) -> list[str]:
    """``parts`` (a block's C statements) with the registers that live in one lane loop as
    that loop's local variables.

    ``dead`` are the register numbers live neither at the block's entry nor at its exit: all
    their reads in the block follow an unguarded write in the same lane (else they would be
    live at entry), so a register of ``dead`` that only one statement mentions, and only in
    the body of the lane loop that statement begins with, always as lane ``i``'s, can live
    in that loop's iteration.
    """
    counts: dict[int, int] = {}
    for text in [*parts, term]:
        for k in {int(m) for m in _REF.findall(text)}:
            counts[k] = counts.get(k, 0) + 1
    out = []
    for text in parts:
        span = _loop_body(text)
        if span is not None:
            lo, hi = span
            head, body, tail = text[:lo], text[lo:hi], text[hi:]
            mine = sorted(k for k in {int(x) for x in _REF.findall(body)}
                          if counts[k] == 1 and k in dead and
                          not re.search(rf"\bR{k}\[", head + tail) and
                          not re.search(rf"\bR{k}\[(?!i\])", body))
            for k in mine:
                body = re.sub(rf"\bR{k}\[i\]", f"r{k}_", body)
            if mine:
                text = head + " ".join(f"{ctypes[k]} r{k}_;" for k in mine) + " " + body + tail
        out.append(text)
    return out
