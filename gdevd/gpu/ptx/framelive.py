"""What a real call must save: the frame region's values live after each call site.

A call of a recursive function (calls.py) lets the callee overwrite every register and
``.param`` variable of the frame region; the caller needs back exactly those live when the
call returns.  So each call site saves ``live_in(return block) & region names``: liveness
over the region's basic blocks, in which a call is an ordinary edge to its return block
(the callee's effect is undone by the restore, so it is transparent) and ``ret`` ends the
function.  ``.param`` variables are read and written through memory-like instructions
(``st.param`` may write part of one), so a mention of one counts as a use and never as a
definition: a variable is live from the function's entry up to its last mention, which
over-approximates and so stays sound.  A call site in the kernel's own code saves nothing:
the region's names hold nothing the kernel reads.
"""

from __future__ import annotations

from .program import BRA, CALL, EXIT, RET
from .regalloc import defs_uses
from .syntax import Addr, Group, Instr, Pair, Sym, Vec


def save_sets(blocks, start: int, names: set[str]) -> dict[int, frozenset[str]]:
    """For every CALL block ``k`` of ``blocks``: the names of ``names`` (the region's
    registers and .param variables) to save, keyed by the return block ``k + 1``."""
    region = range(start, len(blocks))
    summary = {k: _use_kill(blocks[k], names) for k in region}
    live_in = {k: set(summary[k][0]) for k in region}
    changed = True
    while changed:
        changed = False
        for k in reversed(region):
            out = set().union(*(live_in[s] for s in _successors(blocks, k)))
            use, kill = summary[k]
            inn = use | (out - kill)
            if inn != live_in[k]:
                live_in[k] = inn
                changed = True
    return {k + 1: frozenset(live_in.get(k + 1, ())) if k >= start else frozenset()
            for k, b in enumerate(blocks) if b.term.kind == CALL}


def _successors(blocks, k: int) -> list[int]:
    term, nxt = blocks[k].term, [k + 1] if k + 1 < len(blocks) else []
    if term.kind == BRA:
        return [term.target] + (nxt if term.guard is not None else [])
    if term.kind in (EXIT, RET):
        return nxt if term.guard is not None else []
    return nxt      # FALL, CALL (to its return block), BAR, TRAP


def _use_kill(blk, names: set[str]) -> tuple[set[str], set[str]]:
    """(upward-exposed uses, definitions) of ``names`` in one block."""
    use: set[str] = set()
    kill: set[str] = set()
    term = blk.term
    if term.guard is not None:
        use.add(term.guard[0])
    for group in term.frame_args:
        use.update(group)
    for ins in reversed(blk.instrs):
        d, u = defs_uses(ins)
        use -= set(d) - set(u)
        kill |= set(d)
        use |= set(u) | _mentions(ins)
    return use & names, kill & names


def _mentions(ins: Instr) -> set[str]:
    """Variable names an instruction's operands mention (its .param uses among them)."""
    out: set[str] = set()
    stack = list(ins.args)
    while stack:
        a = stack.pop()
        if isinstance(a, Sym):
            out.add(a.name)
        elif isinstance(a, Addr) and a.base is not None:
            stack.append(a.base)
        elif isinstance(a, Vec | Group):
            stack.extend(a.items)
        elif isinstance(a, Pair):
            stack += [a.first, a.second]
    return out
