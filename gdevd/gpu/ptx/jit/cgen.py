"""A kernel's basic blocks as one C function ``<kernel>_run(ctx, budget)``.

The function continues the block in progress (or starts the next one) and runs basic blocks
until the budget of instruction steps is spent (returns 0), the launch's blocks are all
done (1) or a fault stopped it (-1, details in the context).  One step runs a basic block
for the lanes at the scheduled PC, exactly as :class:`~gdevd.gpu.ptx.executor.Wave` does:
runs of lane-local instructions share one loop over the lanes; every memory or warp
instruction starts a new loop, so all lanes finish one memory instruction before any lane
starts the next (the interpreter's order).  The terminator then moves the PCs: while all
live lanes share a PC (``upc`` >= 0) no PC array is touched.
"""

from __future__ import annotations

import re

from ..decode import Ins
from ..program import BAR, BRA, EXIT, FALL, TRAP
from . import floatfns, halfops, intops, memops, warpops  # noqa: F401  (registering the translators)
from .arith import TRANSLATORS
from .operands import Operands, Unsupported

# instructions that must see every lane's previous instruction complete
ORDERED = {"ld", "ldu", "st", "atom", "red"}


class _Ctx:
    """The decoding context's name lookup, for :class:`Ins` (module name only)."""

    def __init__(self, module_name: str) -> None:
        self.module_name = module_name

    def symbol_space(self, name: str):  # pragma: no cover - not used by the translator
        return None


def symbols(module, info) -> tuple[dict[str, tuple[str, int]], dict[str, int], int]:
    """(symbol table, per-thread .param variable offsets, their stride) of a kernel."""
    syms: dict[str, tuple[str, int]] = {}
    for name, off in module.data_layout().offsets.items():
        syms[name] = ("global", off)
    for name, off in info.shared_offsets.items():
        syms[name] = ("shared", off)
    dyn = (info.static_shared + 15) // 16 * 16
    for name in info.dynamic_shared:
        syms[name] = ("shared", dyn)
    for name, off in info.local_offsets.items():
        syms[name] = ("local", off)
    for p in info.params:
        syms[p.name] = ("kparam", p.offset)
    for name, addr in module.function_addresses.items():
        syms.setdefault(name, ("func", addr))
    pv: dict[str, int] = {}
    end = 0
    for name, size in info.pvars.items():
        pv[name] = end
        syms[name] = ("pvar", end)
        end += (max(size, 1) + 15) // 16 * 16
    return syms, pv, end


def instr_c(instr, ops: Operands, module_name: str) -> tuple[str, str]:
    """(C, kind) of one non-control instruction: kind ``pure`` (a statement for lane i that
    may share a loop), ``ordered`` (starts a new lane loop) or ``raw`` (its own loops)."""
    if instr.opcode.startswith(("builtin.", "call")):
        raise Unsupported(instr.opcode)
    ins = Ins(instr, _Ctx(module_name))
    if ins.base in ("bar", "barrier") and "warp" in ins.flags:
        return "", "pure"
    fn = TRANSLATORS.get(ins.base)
    if fn is None:
        raise Unsupported(f"instruction {ins.base}")
    try:
        stmt = fn(ins, ops)
    except (KeyError, IndexError, ValueError, TypeError, AttributeError) as exc:
        raise Unsupported(f"{instr.opcode}: {exc!r}") from exc
    kind = "ordered" if ins.base in ORDERED else "pure"
    if isinstance(stmt, tuple):
        kind, stmt = stmt
    if kind == "raw" and instr.guard is not None:
        raise Unsupported(f"guarded {ins.base}")
    if instr.guard is not None and stmt:
        name, neg = instr.guard
        lv, _ = ops.reg(name)
        stmt = f"if ({'!' if neg else ''}{lv}) {{ {stmt} }}"
    return stmt, kind


def _loops(stmts: list[tuple[str, str]]) -> list[str]:
    """Group statements into lane loops, a new loop at each ordered instruction; raw
    statements stand alone."""
    out: list[str] = []
    group: list[str] = []
    for s, kind in stmts:
        if not s:
            continue
        if kind != "pure" and group:
            out.append("LOOP(" + " ".join(group) + ");")
            group = []
        if kind == "raw":
            out.append(s)
        else:
            group.append(s)
    if group:
        out.append("LOOP(" + " ".join(group) + ");")
    return out


def _guard_c(ops: Operands, guard) -> str:
    lv, _ = ops.reg(guard[0])
    return f"(!{lv})" if guard[1] else lv


def _terminator(pc: int, term, ops: Operands, exit_blocks: set[int]) -> str:
    """C code moving the PCs of the active lanes after block ``pc``."""
    kind, nxt = term.kind, pc + 1
    if kind == FALL:
        return f"GOTO({nxt});"
    if kind == BAR:
        return f"if (c->upc >= 0) c->upc = {nxt}; else SETPC({nxt} + WAIT);"
    if kind == TRAP:
        cond = "1" if term.guard is None else f"any_({_guard_c(ops, term.guard)})"
        return f"if ({cond}) {{ c->fault_kind = F_TRAP; FAULT({term.line}); }} GOTO({nxt});"
    if kind == BRA and term.target in exit_blocks:
        kind = EXIT
    if term.guard is None:
        return f"GOTO({term.target});" if kind == BRA else "EXIT_ALL();"
    g = _guard_c(ops, term.guard)
    count = f"int cnt_ = 0; LOOP(cnt_ += {g} != 0;);"
    if kind == BRA:
        return (f"{{ {count} if (cnt_ == ACTIVE) GOTO({term.target}); else if (!cnt_) "
                f"GOTO({nxt}); else {{ LOOP(pcs[i] = {g} ? {term.target} : {nxt};); "
                f"c->upc = -1; }} }}")
    return (f"{{ {count} if (cnt_ == ACTIVE) EXIT_ALL(); else if (!cnt_) GOTO({nxt}); "
            f"else {{ int uni_ = c->upc >= 0; LOOP(pcs[i] = {g} ? PC_EXIT : {nxt};); "
            f"c->nlive -= cnt_; c->act_ok = 0; c->upc = uni_ ? {nxt} : -1; }} }}")


_STEP_MACROS = """
#define ACTIVE (full ? n : na)
#define SETPC(v) LOOP(pcs[i] = (v);)
#define GOTO(v) do { if (c->upc >= 0) c->upc = (v); else SETPC(v); } while (0)
#define EXIT_ALL() do { SETPC(PC_EXIT); c->nlive -= ACTIVE; c->upc = -1; c->act_ok = 0; } \\
	while (0)
#define any_(g) __extension__({ int a_ = 0; LOOP(a_ |= (g) != 0;); a_; })
"""


def _block_fn(fname: str, pc: int, blk, ops: Operands, exit_blocks, module_name) -> str:
    """One basic block as its own small function (keeps the compiler's work linear)."""
    stmts = [instr_c(ins, ops, module_name) for ins in blk.instrs]
    steps = len(blk.instrs) + (blk.term.kind != FALL)
    body = "\n\t".join(_loops(stmts))
    term = _terminator(pc, blk.term, ops, exit_blocks)
    text = body + term
    used = sorted({int(m) for m in re.findall(r"\bR(\d+)\[", text)})
    decls = "".join(f"\n\t{ops.ctypes[k]} *const restrict R{k} = ({ops.ctypes[k]} *)"
                    f"(c->regs + {k}ull * c->reg_stride);" for k in used)
    return f"""
static int {fname}_b{pc}(struct jctx *c, const int full, const int na)
{{
	const int n = c->nt;
	int32_t *const pcs = c->pc;
	const int32_t *const act = c->act;
	const int32_t *const tid_x = c->tid_x, *const tid_y = c->tid_y, *const tid_z = c->tid_z;
	(void)n; (void)pcs; (void)act; (void)tid_x; (void)tid_y; (void)tid_z;{decls}
	{body}
	c->instructions += {steps}; c->thread_instructions += (uint64_t){steps} * ACTIVE;
	{term}
	return {steps};
}}
"""


def kernel_c(module, info, fname: str) -> str:
    """C source of one kernel's run function (Unsupported if any construct is not handled)."""
    syms, _, _ = symbols(module, info)
    ops = Operands(info.regs, syms, info.param_size + 16)
    blocks = info.blocks
    exit_blocks = {k for k, b in enumerate(blocks)
                   if not b.binders and b.term.kind == EXIT and b.term.guard is None}
    fns = [_block_fn(fname, pc, blk, ops, exit_blocks, module.name)
           for pc, blk in enumerate(blocks)]
    table = ", ".join(f"{fname}_b{pc}" for pc in range(len(blocks)))
    return f"""{_STEP_MACROS}{"".join(fns)}
static int (*const {fname}_blocks[])(struct jctx *, int, int) = {{ {table} }};

static int64_t {fname}_body(struct jctx *c, int64_t budget)
{{
	const int n = c->nt;
	int64_t used = 0;

	for (;;) {{
		int32_t pc;
		int full, r;
		if (!c->started) {{
			if (c->block >= c->block_end)
				return 1;
			block_init(c, {len(info.regs)});
		}}
		if (c->upc >= 0) {{
			pc = c->upc;
			full = c->nlive == n;
			if (!full && !c->act_ok)
				live_lanes(c);
		}} else {{
			pc = pick(c);
			if (pc < 0) {{
				c->started = 0;
				c->block += c->block_step;
				continue;
			}}
			full = c->upc >= 0 && c->nlive == n;
		}}
		if (pc >= {len(blocks)})
			return -1;
		r = {fname}_blocks[pc](c, full, c->nact);
		if (r < 0)
			return -1;
		used += r;
		if (c->upc >= 0 && c->nlive == 0)
			c->upc = -1;
		if (used >= budget)
			return 0;
	}}
}}

int64_t {fname}_run(struct jctx *c, int64_t budget)
{{
	int64_t r;

	for (int k = 0; k < TLB_SIZE; k++)
		c->tlb_tag[k] = ~0ull;
	pthread_rwlock_rdlock(&c->mmu->lock);
	r = {fname}_body(c, budget);
	pthread_rwlock_unlock(&c->mmu->lock);
	return r;
}}
"""
