"""Register coalescing: nvcc names a fresh virtual register for almost every value, so a
kernel of 900 instructions declares ~900 registers.  Each would be a numpy array over the
wave's threads; this pass maps virtual registers whose live ranges never overlap onto one
array (per declared type), by liveness analysis on the linked code and greedy colouring.

Per-thread semantics make this valid under SIMT execution: every thread runs the same code,
so a value is dead for a thread exactly when it is dead at that thread's program point.  A
predicated definition may leave the old value in place, so it counts as a use too.
"""

from __future__ import annotations

from .syntax import Addr, Group, Instr, Label, Not, Pair, Reg, Sym, Vec

CONTROL = ("bra", "ret", "exit", "trap", "bar", "barrier")
NO_DEST = {"st", "sust", "red", "bra", "ret", "exit", "trap", "bar", "barrier", "membar", "fence",
           "prefetch", "prefetchu", "nanosleep", "pmevent", "brkpt", "discard",
           "applypriority", "builtin"}


def _regs_in(op) -> list[str]:
    if isinstance(op, Reg):
        return [op.name]
    if isinstance(op, Addr):
        return _regs_in(op.base) if op.base is not None else []
    if isinstance(op, Vec | Group):
        return [r for x in op.items for r in _regs_in(x)]
    if isinstance(op, Pair):
        return _regs_in(op.first) + _regs_in(op.second)
    if isinstance(op, Not):
        return _regs_in(op.operand)
    return []


def defs_uses(ins: Instr) -> tuple[list[str], list[str]]:
    """Registers an instruction writes and reads (a guarded write also reads)."""
    parts = ins.opcode.split(".")
    base = parts[0]
    no_dest = base in NO_DEST or (base == "wmma" and "store" in parts) or \
        (base == "bar" and "red" not in parts) or \
        (bool(ins.args) and isinstance(ins.args[0], Addr))    # mbarrier.init [a], n ...
    if no_dest or not ins.args:
        defs: list[str] = []
        uses = [r for a in ins.args for r in _regs_in(a)]
    else:
        defs = _regs_in(ins.args[0])
        uses = [r for a in ins.args[1:] for r in _regs_in(a)]
    if ins.guard is not None:
        uses = uses + [ins.guard[0]] + defs
    return defs, uses


def _blocks(code: list) -> tuple[list[list[Instr]], list[list[int]]]:
    """Basic blocks of linked code and their successors."""
    blocks: list[list[Instr]] = [[]]
    labels: dict[str, int] = {}
    for item in code:
        if isinstance(item, Label):
            if blocks[-1]:
                blocks.append([])
            labels[item.name] = len(blocks) - 1
            continue
        blocks[-1].append(item)
        if item.opcode.split(".")[0] in CONTROL:
            blocks.append([])
    succ: list[list[int]] = []
    for k, blk in enumerate(blocks):
        nxt = [k + 1] if k + 1 < len(blocks) else []
        if not blk:
            succ.append(nxt)
            continue
        last = blk[-1]
        base = last.opcode.split(".")[0]
        if base == "bra":
            target = labels.get(last.args[0].name) if last.args and \
                isinstance(last.args[0], Sym) else None
            out = [target] if target is not None else []
            succ.append(out + (nxt if last.guard is not None else []))
        elif base in ("ret", "exit", "trap"):
            succ.append(nxt if last.guard is not None else [])
        else:
            succ.append(nxt)
    return blocks, succ


def _liveness(blocks, succ) -> list[set[str]]:
    """Live-out set of every block (backward dataflow to a fixpoint)."""
    summary = []
    for blk in blocks:
        use: set[str] = set()
        kill: set[str] = set()
        for ins in reversed(blk):
            d, u = defs_uses(ins)
            use -= set(d) - set(u)
            kill |= set(d)
            use |= set(u)
        summary.append((use, kill))
    live_in = [set(u) for u, _ in summary]
    live_out: list[set[str]] = [set() for _ in blocks]
    changed = True
    while changed:
        changed = False
        for k in range(len(blocks) - 1, -1, -1):
            out = set().union(*(live_in[s] for s in succ[k])) if succ[k] else set()
            use, kill = summary[k]
            inn = use | (out - kill)
            if out != live_out[k] or inn != live_in[k]:
                live_out[k], live_in[k] = out, inn
                changed = True
    return live_out


def coalesce(code: list, regs: dict[str, str]) -> tuple[list, dict[str, str]]:
    """Rename the registers of ``code`` onto as few arrays as liveness allows."""
    blocks, succ = _blocks(code)
    live_out = _liveness(blocks, succ)
    interfere: dict[str, set[str]] = {r: set() for r in regs}
    for blk, out in zip(blocks, live_out, strict=True):
        live = set(out)
        for ins in reversed(blk):
            d, u = defs_uses(ins)
            for r in d:
                interfere.setdefault(r, set()).update(live | set(d))
                for x in live:
                    interfere.setdefault(x, set()).add(r)
            live -= set(d) - set(u)
            live |= set(u)
    colour: dict[str, str] = {}
    pools: dict[str, list[tuple[str, set[str]]]] = {}
    for r, t in regs.items():
        for phys, members in pools.setdefault(t, []):
            if not interfere.get(r, set()) & members:
                members.add(r)
                colour[r] = phys
                break
        else:
            phys = r
            pools[t].append((phys, {r}))
            colour[r] = phys
    new_regs = {phys: t for t, lst in pools.items() for phys, _ in lst}
    return [_rename(item, colour) for item in code], new_regs


def _rename(item, colour: dict[str, str]):
    if isinstance(item, Label):
        return item
    guard = (colour.get(item.guard[0], item.guard[0]), item.guard[1]) if item.guard else None
    return Instr(item.opcode, [_ren(a, colour) for a in item.args], item.line, guard)


def _ren(op, colour: dict[str, str]):
    if isinstance(op, Reg):
        return Reg(colour.get(op.name, op.name))
    if isinstance(op, Addr):
        return Addr(_ren(op.base, colour) if op.base is not None else None, op.offset)
    if isinstance(op, Vec):
        return Vec(tuple(_ren(x, colour) for x in op.items))
    if isinstance(op, Group):
        return Group(tuple(_ren(x, colour) for x in op.items))
    if isinstance(op, Pair):
        return Pair(_ren(op.first, colour), _ren(op.second, colour))
    if isinstance(op, Not):
        return Not(_ren(op.operand, colour))
    return op
