"""Registers of a long block kept in C locals of the lane loop instead of their arrays.

A block compiled as one ``LOOP1`` loop (the rounds of an unrolled cipher) runs every
instruction of one lane before the next lane starts, and no other lane reads a lane's
registers meanwhile (warp collectives end the loop).  So each register the loop touches can
be a local of the lane's iteration, which the C compiler keeps in a machine register
instead of storing every write to memory and reloading it: read from its array first if
the block may read it before writing it, written back last if a later block may read it
(backward liveness; the terminator's predicate is read by the terminator's own loop).
"""

from __future__ import annotations

import re

from ..regalloc import defs_uses
from .uniform import successors

_ANY = re.compile(r"\b(?:LOOP1?|CLOOP)\(")     # any lane loop


def promotion(blocks, live: list[set[str]], pc: int) -> tuple[set[str], set[str]]:
    """(registers block ``pc`` may read before writing them, registers whose value must be
    in their array when the block ends: live afterwards, or the terminator's predicate)."""
    out_live = set().union(*(live[s] for s in successors(blocks)[pc] if s < len(blocks)))
    blk = blocks[pc]
    written: set[str] = set()
    exposed: set[str] = set()
    for ins in blk.instrs:
        d, u = defs_uses(ins)
        exposed |= set(u) - written
        if ins.guard is None:
            written |= set(d)
        else:
            exposed |= set(d) - written
            written |= set(d)
    keep = out_live | ({blk.term.guard[0]} if blk.term.guard is not None else set())
    return exposed, keep


def localize(body: list[str], names: dict[str, str], ctypes: list[str], exposed: set[str],
            keep: set[str], macro: str = "LOOP1") -> list[str]:
    """``body`` (a block's C statements) with every register of its one ``macro`` loop
    (``LOOP1``, or ``LOOP`` for a block's vectorized version) in a local of the lane's
    iteration: read from its array first if ``exposed``, written back last if in ``keep``;
    unchanged unless the body is exactly that loop (after block-entry declarations, before
    the loop's own fault checks) and no other statement touches a promoted register."""
    loops = [k for k, s in enumerate(body) if _ANY.search(s)]
    m = _ANY.search(body[loops[0]]) if len(loops) == 1 else None
    if m is None or m.group() != macro + "(":
        return body
    k = loops[0]
    head, sep, rest = body[k][:m.start()], m.group(), body[k][m.end():]
    inner, tail = _split_macro(rest)
    if inner is None or re.search(r"\bR\d+\[", head + tail):
        return body
    others = " ".join(body[:k] + body[k + 1:])
    by_index = {int(v[1:]): r for r, v in names.items()}
    first, last = [], []
    for n in sorted({int(m) for m in re.findall(r"\bR(\d+)\[i\]", inner)}):
        if re.search(rf"\bR{n}\[", others) or re.search(rf"\bR{n}\[(?!i\])", inner):
            continue
        inner = re.sub(rf"\bR{n}\[i\]", f"L{n}_", inner)
        r = by_index[n]
        first.append(f"{ctypes[n]} L{n}_" + (f" = R{n}[i];" if r in exposed else ";"))
        if r in keep:
            last.append(f"R{n}[i] = L{n}_;")
    text = head + sep + " ".join(first) + " " + inner + " " + " ".join(last) + ")" + tail
    return body[:k] + [text] + body[k + 1:]


def _split_macro(rest: str) -> tuple[str | None, str]:
    """(the macro's argument, what follows its closing parenthesis) of ``rest``, the text
    after ``LOOP1(`` or ``LOOP(``; None if the parentheses do not balance."""
    depth = 1
    for j, ch in enumerate(rest):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0:
            return rest[:j], rest[j + 1:]
    return None, ""
