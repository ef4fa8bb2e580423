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


def liveness(blocks) -> list[set[str]]:
    """Registers live at the entry of each block (a guarded write does not kill)."""
    succ = successors(blocks)
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
    live = [set(g) for g in gen]
    changed = True
    while changed:
        changed = False
        for pc in reversed(range(len(blocks))):
            out = set().union(*(live[s] for s in succ[pc] if s < len(blocks)))
            new = gen[pc] | (out - kill[pc])
            if new != live[pc]:
                live[pc], changed = new, True
    return live


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


def promote(body: list[str], names: dict[str, str], ctypes: list[str], exposed: set[str],
            keep: set[str]) -> list[str]:
    """``body`` (a block's C statements) with every register of its one ``LOOP1`` loop in a
    local of the lane's iteration: read from its array first if ``exposed``, written back
    last if in ``keep``; unchanged unless the body is exactly that loop (after block-entry
    declarations) and no other statement touches a promoted register."""
    loops = [k for k, s in enumerate(body) if "LOOP1(" in s]
    if len(loops) != 1 or any("LOOP(" in s or "CLOOP(" in s for s in body):
        return body
    k = loops[0]
    head, sep, rest = body[k].partition("LOOP1(")
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
    after ``LOOP1(``; None if the parentheses do not balance."""
    depth = 1
    for j, ch in enumerate(rest):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0:
            return rest[:j], rest[j + 1:]
    return None, ""
