"""Which register reads are *data-uniform*: computed only from values every lane of a block
shares.

A value is block-uniform when it comes from a constant, a symbol's address, a kernel
parameter (``ld.param`` of the kernel's own parameters, read-only), a special register that
is the same for the whole block (``%ntid``, ``%nctaid``, ``%ctaid``, ...), the zero every
register starts with, or a lane-local instruction (:data:`~..program.PURE`) over such values
(under a guard that is itself uniform).  Per-thread values are everything else: ``%tid``,
``%laneid``, the clock, memory loads (another thread may store between two lanes' reads),
atomics, warp collectives, call parameters.

The analysis works on the registers after allocation (one name may hold many values): for
each read it takes the definitions that may reach it (reaching definitions over the basic
blocks, a guarded definition adds to the old value instead of replacing it), and a
definition is uniform when every definition its operands may read is.  The greatest fixed
point is taken, so a loop counter stepped by a uniform amount stays uniform.

**The contract is data uniformity, not a proof that the lanes agree.**  Lanes that took
different paths (``x = 1`` under a divergent branch, ``x = 2`` on the other side), or ran a
loop a different number of times, hold different values of a data-uniform register, and the
engine's min-PC scheduler with its fairness steps may bring such lanes together.  A consumer
must therefore check at run time that the lanes it treats as one agree (compiled code
compares each lane's address with the first active lane's, see ``jit/lanes.py``), or only
use what this module says as a hint for where such a check pays.
"""

from __future__ import annotations

from ..program import BRA, EXIT, PURE
from ..regalloc import defs_uses
from ..syntax import Addr, Group, Imm, Not, Pair, Reg, Special, Sym, Vec

# special registers with one value for the whole block (and launch)
UNIFORM_SPECIALS = ("%ntid", "%nctaid", "%ctaid", "%nsmid", "%gridid", "%dynamic_smem_size",
                    "%total_smem_size", "%nwarpid", "WARP_SZ", "%aggr_smem_size", "%clusterid",
                    "%nclusterid", "%cluster_ctaid", "%cluster_nctaid", "%cluster_ctarank",
                    "%cluster_nctarank", "%is_explicit_cluster")


def successors(blocks) -> list[list[int]]:
    """Successor block indices of every block (as the executor moves the PCs)."""
    succ = []
    for pc, b in enumerate(blocks):
        kind, guard = b.term.kind, b.term.guard
        nxt = [pc + 1] if pc + 1 < len(blocks) else []
        if kind == BRA:
            succ.append([b.term.target] + (nxt if guard is not None else []))
        elif kind == EXIT:
            succ.append(nxt if guard is not None else [])
        else:
            succ.append(nxt)
    return succ


def _operand_uniform(op, kparams: frozenset[str]) -> bool | None:
    """True/False for a non-register operand, None if it is (or holds) registers."""
    if isinstance(op, Imm | Sym):
        return True
    if isinstance(op, Special):
        return op.name.startswith(UNIFORM_SPECIALS)
    if isinstance(op, Addr):
        if isinstance(op.base, Sym):
            return op.base.name in kparams
        return None
    if isinstance(op, Vec | Group):
        parts = [_operand_uniform(x, kparams) for x in op.items]
        return False if False in parts else None
    if isinstance(op, Not | Pair | Reg):
        return None
    return False


def _candidate(ins, kparams: frozenset[str]) -> bool:
    """Whether an instruction computes a uniform value when its register operands are."""
    parts = ins.opcode.split(".")
    base = parts[0]
    if base == "ld" and "param" in parts:
        a = ins.args[1] if len(ins.args) > 1 else None
        return isinstance(a, Addr) and isinstance(a.base, Sym) and a.base.name in kparams
    if base in PURE:
        srcs = ins.args[1:]
    else:
        return False
    return all(_operand_uniform(a, kparams) is not False for a in srcs)


class Uniformity:
    """Data-uniform register reads of one kernel's blocks (see the module docstring).

    ``blocks`` are the kernel's :class:`~..program.Block` list (after register allocation);
    ``kparams`` the names of the kernel's parameters (``ld.param`` from them is uniform).
    """

    def __init__(self, blocks, kparams, regs=None, symbols=None) -> None:
        self.blocks = blocks
        self._kparams = frozenset(kparams)
        self._regs = regs or {}
        self._symbols = symbols or {}
        self._defs: list[tuple[int, int, str]] = []     # (block, index, register)
        self._by_reg: dict[str, int] = {}               # register -> bitmask of its defs
        self._number_defs()
        self._reach_in = self._reaching()
        self._uniform = self._solve()
        self._value = self._constants()

    # -- reaching definitions ------------------------------------------------------------

    def _def_id(self, pc: int, k: int, reg: str) -> int:
        self._defs.append((pc, k, reg))
        d = len(self._defs) - 1
        self._by_reg[reg] = self._by_reg.get(reg, 0) | (1 << d)
        return d

    def _number_defs(self) -> None:
        """Number every definition; -1 is the start of the kernel (all registers zero)."""
        self._entry: dict[str, int] = {}
        self._at: dict[tuple[int, int], list[int]] = {}
        regs = sorted({r for b in self.blocks for ins in b.instrs for r in
                       sum(defs_uses(ins), [])} |
                      {b.term.guard[0] for b in self.blocks if b.term.guard is not None})
        for r in regs:
            self._entry[r] = self._def_id(-1, 0, r)
        for pc, b in enumerate(self.blocks):
            for k, ins in enumerate(b.instrs):
                self._at[(pc, k)] = [self._def_id(pc, k, r) for r in defs_uses(ins)[0]]

    def _step(self, live: int, pc: int, k: int) -> int:
        """Reaching set after instruction k of block pc."""
        ins = self.blocks[pc].instrs[k]
        for d in self._at[(pc, k)]:
            if ins.guard is None:
                live &= ~self._by_reg[self._defs[d][2]]
            live |= 1 << d
        return live

    def _reaching(self) -> list[int]:
        """Bitmask of the definitions reaching the start of each block."""
        n = len(self.blocks)
        succ = successors(self.blocks)
        entry = sum(1 << d for d in self._entry.values())
        ins_in = [0] * n
        if n:
            ins_in[0] = entry
        work = list(range(n))
        while work:
            pc = work.pop()
            out = ins_in[pc]
            for k in range(len(self.blocks[pc].instrs)):
                out = self._step(out, pc, k)
            for s in succ[pc]:
                if s < n and ins_in[s] | out != ins_in[s]:
                    ins_in[s] |= out
                    work.append(s)
        return ins_in

    # -- the fixed point -----------------------------------------------------------------

    def _reads(self, live: int, ins) -> int:
        """Definitions an instruction's register operands (and guard) may read."""
        _, uses = defs_uses(ins)
        mask = 0
        for r in uses:
            mask |= live & self._by_reg.get(r, 0)
        return mask

    def _solve(self) -> int:
        """Bitmask of the uniform definitions (greatest fixed point)."""
        deps: dict[int, int] = {}
        uniform = sum(1 << d for d in self._entry.values())
        for pc, b in enumerate(self.blocks):
            live = self._reach_in[pc]
            for k, ins in enumerate(b.instrs):
                ds = self._at[(pc, k)]
                if ds and _candidate(ins, self._kparams):
                    for d in ds:
                        deps[d] = self._reads(live, ins)
                        uniform |= 1 << d
                live = self._step(live, pc, k)
        changed = True
        while changed:
            changed = False
            for d, need in deps.items():
                if uniform >> d & 1 and need & ~uniform:
                    uniform &= ~(1 << d)
                    changed = True
        return uniform

    def _constants(self) -> dict[int, int]:
        """The value of every definition that sets a whole integer register to a constant
        known at compile time (the kernel's start sets every register to 0)."""
        value = {d: 0 for d in self._entry.values()}
        for (pc, k), ds in self._at.items():
            ins = self.blocks[pc].instrs[k]
            parts = ins.opcode.split(".")
            if parts[0] != "mov" or len(ds) != 1 or ins.guard is not None or \
                    len(ins.args) != 2:
                continue
            reg, src = self._defs[ds[0]][2], ins.args[1]
            bits = _int_bits(parts[-1])
            if bits is None or _int_bits(self._regs.get(reg, "")) != bits:
                continue
            if isinstance(src, Imm) and isinstance(src.value, int):
                value[ds[0]] = src.value & ((1 << bits) - 1)
            elif isinstance(src, Sym) and self._symbols.get(src.name, ("global",))[0] in \
                    ("shared", "local", "kparam", "func"):
                value[ds[0]] = (self._symbols[src.name][1] + src.offset) & ((1 << bits) - 1)
        return value

    # -- queries -------------------------------------------------------------------------

    def live_before(self, pc: int, k: int) -> int:
        """Definitions reaching instruction k of block pc (bitmask)."""
        live = self._reach_in[pc]
        for j in range(k):
            live = self._step(live, pc, j)
        return live

    def uniform_read(self, pc: int, k: int, reg: str) -> bool:
        """Whether every definition of ``reg`` that instruction k of block pc may read is
        data-uniform."""
        mask = self.live_before(pc, k) & self._by_reg.get(reg, 0)
        return not mask & ~self._uniform

    def constant(self, pc: int, k: int, reg: str) -> int | None:
        """The value (bits) ``reg`` has whenever instruction k of block pc reads it, if every
        definition that may reach the read sets it to that same compile-time constant."""
        return self._const_in(self.live_before(pc, k), reg)

    def constants(self, pc: int) -> list[dict[str, int]]:
        """For each instruction of block pc, the registers it reads that are constants."""
        out = []
        live = self._reach_in[pc]
        for k, ins in enumerate(self.blocks[pc].instrs):
            known = {}
            for r in set(defs_uses(ins)[1]):
                c = self._const_in(live, r)
                if c is not None:
                    known[r] = c
            out.append(known)
            live = self._step(live, pc, k)
        return out

    def _const_in(self, live: int, reg: str) -> int | None:
        mask = live & self._by_reg.get(reg, 0)
        vals = set()
        while mask:
            d = (mask & -mask).bit_length() - 1
            mask &= mask - 1
            if d not in self._value:
                return None
            vals.add(self._value[d])
        return vals.pop() if len(vals) == 1 else None

    def entry_uniform(self, pc: int, k: int, regs) -> bool:
        """Whether ``regs`` read by instruction k of block pc are data-uniform and not
        written by the block's earlier instructions: their values at the block's entry are
        the ones the instruction reads, so it may be evaluated once before the block."""
        for j in range(k):
            if set(regs) & set(defs_uses(self.blocks[pc].instrs[j])[0]):
                return False
        return all(self.uniform_read(pc, k, r) for r in regs)


def _int_bits(t: str) -> int | None:
    """Width in bits of an integer PTX type (None for floats, predicates, others)."""
    if len(t) >= 2 and t[0] in "usb" and t[1:].isdigit():
        return int(t[1:])
    return None


def address_regs(addr) -> list[str] | None:
    """Registers of a memory operand's address (None if it is not a memory operand)."""
    if not isinstance(addr, Addr):
        return None
    return [addr.base.name] if isinstance(addr.base, Reg) else []
