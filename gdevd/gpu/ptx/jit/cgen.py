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

import dataclasses
import re
from dataclasses import replace

from ..decode import Ins
from ..devrt import calls_devrt
from ..ops_heap import SIGNATURES
from ..program import BAR, BRA, EXIT, FALL, TRAP, cluster_arrive, warp_collective
from . import (  # noqa: F401  (registering the translators)
    floatfns,
    halfops,
    intops,
    matrixops,
    mbarops,
    memops,
    setops,
    simdops,
    surfops,
    texops,
    warpops,
    wmmaops,
)
from .arith import TRANSLATORS
from .devrtops import devrt_call
from .heapops import heap_call
from .lanes import inline_access, loops
from .liveness import live_sets, promote, zeroed_at_start
from .localize import localize, promotion
from .operands import Operands, Unsupported
from .printfops import printf_call
from .ranges import safe_shared
from .surfops import GUARDED_RAW
from .uniform import Uniformity, address_regs
from .versions import hoisted_loads, on_cycle, versioned

# instructions that must see every lane's previous instruction complete
ORDERED = {"ld", "ldu", "st", "atom", "red"}
# collectives whose statement visits the executing lanes with LOOP only: guarded, they run
# for the lanes whose guard holds (_for_guarded_lanes), as the interpreter's guarded binder
# runs them (program.guarded): the other lanes do not execute the instruction
GUARDABLE = {"shfl", "vote", "activemask", "match", "redux", "elect"}


def _for_guarded_lanes(stmt: str, guard: str) -> str:
    """``stmt`` (a raw statement of :data:`GUARDABLE`) run for the active lanes whose
    ``guard`` holds: their list shadows the block function's ``act``, so its LOOPs visit
    only them (none: it does not run)."""
    return (f"{{ int32_t gl_[1024]; int gn_ = 0; LOOP(if ({guard}) gl_[gn_++] = i;); "
            f"if (gn_) {{ const int full = 0, na = gn_; const int32_t *const act = gl_; "
            f"(void)full; (void)na; (void)act; {stmt} }} }}")


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


def instr_c(instr, ops: Operands, module_name: str) -> tuple[str | memops.Access, str]:
    """(C, kind) of one non-control instruction: kind ``pure`` (a statement for lane i that
    may share a loop), ``ordered`` (starts a new lane loop), ``raw`` (its own loops) or
    ``mem`` (an unguarded load or store: a :class:`memops.Access`, see lanes.py)."""
    if instr.opcode.startswith("builtin.") and instr.opcode[len("builtin."):] in SIGNATURES:
        return heap_call(instr, ops), "ordered"
    if instr.opcode == "builtin.vprintf":
        return printf_call(instr, ops), "raw"      # (it tests its guard itself)
    if calls_devrt(instr):
        return devrt_call(instr, ops), "raw"
    if instr.opcode.startswith(("builtin.", "call")):
        raise Unsupported(instr.opcode)
    ins = Ins(instr, _Ctx(module_name))
    if (ins.base in ("bar", "barrier") and "warp" in ins.flags) or cluster_arrive(ins):
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
    if kind == GUARDED_RAW:                 # it tests its guard itself
        return stmt, "raw"
    if kind == "raw" and instr.guard is not None:
        if ins.base not in GUARDABLE:
            raise Unsupported(f"guarded {ins.base}")
        return _for_guarded_lanes(stmt, ops.guard(instr.guard)), "raw"
    if isinstance(stmt, memops.Access):
        if instr.guard is None:
            return stmt, kind
        kind, stmt = "ordered", inline_access(stmt)
    if instr.guard is not None and stmt:
        stmt = f"if ({ops.guard(instr.guard)}) {{ {stmt} }}"
    return stmt, kind


def _terminator(pc: int, term, ops: Operands, exit_blocks: set[int]) -> str:
    """C code moving the PCs of the active lanes after block ``pc``."""
    kind, nxt = term.kind, pc + 1
    if kind == FALL:
        return f"GOTO({nxt});"
    if kind == BAR:
        return f"if (c->upc >= 0) c->upc = {nxt}; else SETPC({nxt} + WAIT);"
    if kind == TRAP and term.assert_args:
        # the first failing lane, for launch.py to read its __assertfail arguments
        g = "1" if term.guard is None else ops.guard(term.guard)
        return (f"{{ int l_ = -1; LOOP(if (l_ < 0 && {g}) l_ = i;); if (l_ >= 0) {{ "
                f"c->fault_kind = F_ASSERT; c->fault_va = (uint64_t)l_; FAULT({term.line}); }} }}"
                f" GOTO({nxt});")
    if kind == TRAP:
        cond = "1" if term.guard is None else f"any_({ops.guard(term.guard)})"
        return f"if ({cond}) {{ c->fault_kind = F_TRAP; FAULT({term.line}); }} GOTO({nxt});"
    if kind == BRA and term.target in exit_blocks:
        kind = EXIT
    if term.guard is None:
        return f"GOTO({term.target});" if kind == BRA else "EXIT_ALL();"
    g = ops.guard(term.guard)
    count = f"int cnt_ = 0; LOOP(cnt_ += {g} != 0;);"
    if kind == BRA:
        return (f"{{ {count} if (cnt_ == ACTIVE) GOTO({term.target}); else if (!cnt_) "
                f"GOTO({nxt}); else {{ c->pcw = 1; LOOP(pcs[i] = {g} ? {term.target} : {nxt};); "
                f"c->upc = -1; }} }}")
    return (f"{{ {count} if (cnt_ == ACTIVE) EXIT_ALL(); else if (!cnt_) GOTO({nxt}); "
            f"else {{ int uni_ = c->upc >= 0; c->pcw = 1; LOOP(pcs[i] = {g} ? PC_EXIT : {nxt};); "
            f"c->nlive -= cnt_; c->act_ok = 0; c->upc = uni_ ? {nxt} : -1; }} }}")


_STEP_MACROS = """
#define ACTIVE (full ? n : na)
#define SETPC(v) LOOP(pcs[i] = (v);)
#define GOTO(v) do { if (c->upc >= 0) c->upc = (v); else SETPC(v); } while (0)
/* (a uniform block whose lanes all exit ends: its pc[] is not read again) */
#define EXIT_ALL() do { if (c->upc < 0) SETPC(PC_EXIT); c->nlive -= ACTIVE; c->upc = -1; \\
	c->act_ok = 0; } while (0)
#define any_(g) __extension__({ int a_ = 0; LOOP(a_ |= (g) != 0;); a_; })
"""


def _mark(stmts: list, blk, pc: int, uni: Uniformity, consts, static_shared: int,
          vector: bool) -> list:
    """Flag the shared accesses that cannot fault and (long blocks) the global and constant
    loads whose address is data-uniform at block entry."""
    out = []
    safe = safe_shared(blk, consts, static_shared)
    for k, (s, kind) in enumerate(stmts):
        if k in safe and isinstance(s, memops.Access) and s.space == "shared":
            s = dataclasses.replace(s, safe=True)
        if not vector and isinstance(s, memops.Access) and s.space in ("global", "const") and \
                s.acc == memops.ACC_R:
            regs = address_regs(blk.instrs[k].args[1])
            if regs is not None and uni.entry_uniform(pc, k, regs):
                s = dataclasses.replace(s, hoist=True)
        out.append((s, kind))
    return out


def _block_fn(fname: str, pc: int, blocks, ops: Operands, exit_blocks, module_name,
              uni: Uniformity, static_shared: int, dead: set[int],
              regs_io: tuple[set, set]) -> str:
    """One basic block as its own small function (keeps the compiler's work linear).

    The body is an inner function whose buffers are ``restrict`` parameters (registers,
    PCs, lane lists, the translated addresses): they never overlap, and saying so lets the C
    compiler vectorize the lane loops.  ``xb``, the origin of every memory access, is not
    ``restrict``: guarded accesses and atomics reach the same memory through other pointers,
    and the registers' ``restrict`` already tells the compiler that memory is not a register.
    Registers of ``dead`` (live neither at the block's entry nor at its exit) that one lane
    loop holds become its local variables (:func:`~.liveness.promote`).
    """
    stmts = []
    blk = blocks[pc]
    consts = uni.constants(pc)
    for ins, known in zip(blk.instrs, consts, strict=True):
        ops.consts = known
        stmts.append(instr_c(ins, ops, module_name))
    ops.consts = {}
    steps = len(blk.instrs) + (blk.term.kind != FALL)
    vector = vectorized(pc, blk)
    stmts = _mark(stmts, blk, pc, uni, consts, static_shared, vector)
    both = None
    parts = loops(stmts, vector)
    term = _terminator(pc, blk.term, ops, exit_blocks)
    if not vector:
        parts = localize(parts, ops.names, ops.ctypes, *regs_io)
        if hoisted_loads(stmts) and on_cycle(blocks, pc):
            both = versioned(stmts, promote(parts, term, dead, ops.ctypes), term, dead,
                             ops.names, ops.ctypes, regs_io)
        parts = both or parts
    body = "\n\t".join(promote(parts, term, dead, ops.ctypes))
    text = body + term
    used = sorted({int(m) for m in re.findall(r"\bR(\d+)\[", text)})
    params = ["struct jctx *c", "const int full", "const int na", "const int n",
              "int32_t *restrict pcs", "const int32_t *restrict act",
              "const int32_t *restrict tid_x", "const int32_t *restrict tid_y",
              "const int32_t *restrict tid_z", "uint64_t *restrict xa", "uint8_t *xb",
              "const uint64_t lofs"]
    args = ["c", "full", "na", "c->nt", "c->pc", "c->act", "c->tid_x", "c->tid_y", "c->tid_z",
            "c->xa", "c->xb", "(uint64_t)(c->local - c->xb)"]
    for k in used:
        params.append(f"{ops.ctypes[k]} *restrict R{k}")
        args.append(f"({ops.ctypes[k]} *)(c->regs + {k}ull * c->reg_stride)")
    sep = ",\n\t\t"
    attr = VECTORIZE if vector or both else ""
    return f"""
static inline __attribute__((always_inline)) {attr} int {fname}_i{pc}({sep.join(params)})
{{
	(void)n; (void)pcs; (void)act; (void)tid_x; (void)tid_y; (void)tid_z; (void)xa; (void)xb;
	(void)lofs;
	{body}
	c->instructions += {steps}; c->thread_instructions += (uint64_t){steps} * ACTIVE;
	{term}
	return {steps};
}}

static {attr} int {fname}_b{pc}(struct jctx *c, const int full, const int na)
{{
	return {fname}_i{pc}({", ".join(args)});
}}
"""


# Blocks of at most VECTORIZE_MAX instructions (loop bodies, address arithmetic) are written
# for the vectorizer (see _loops) and get its full cost model; longer ones (unrolled
# ciphers) keep per-lane pointers and -O2's cheap model, which compile several times faster.
# A block that branches back (a loop's body or latch: nvcc unrolls inner loops 4x, so 30-60
# instructions) runs many times per block start, and is vectorized up to LOOP_VECTORIZE_MAX
# (naive MMUL: 2.7x faster; few blocks of the repository's kernels are such loops).
VECTORIZE_MAX = 24
LOOP_VECTORIZE_MAX = 64


def vectorized(pc: int, blk) -> bool:
    """Whether block ``pc`` is written for the vectorizer (see above)."""
    back = blk.term.kind == BRA and blk.term.target <= pc
    return len(blk.instrs) <= (LOOP_VECTORIZE_MAX if back else VECTORIZE_MAX)

# (no loop-to-memcpy: a call per 16-lane chunk costs more than the vector copy it replaces)
VECTORIZE = ('__attribute__((optimize("vect-cost-model=dynamic", '
             '"no-tree-loop-distribute-patterns")))')
def line0(info) -> int:
    """The first PTX line of a kernel's code (0 if it has none): the origin of the line
    numbers its translation records (see :func:`relative`)."""
    return min((ins.line for b in info.blocks for ins in b.instrs),
               default=min((b.term.line for b in info.blocks if b.term.line), default=0))


def relative(info):
    """(a copy of ``info`` whose instructions' and terminators' lines count from
    :func:`line0`, that origin).  Translated so, kernels that differ only in where their
    PTX sits are the same C: a fault's recorded line is relative, and the launch adds the
    origin back (launch.py)."""
    org = line0(info)

    def shift(line: int) -> int:
        return line - org if line else 0
    blocks = [replace(b, instrs=[replace(i, line=shift(i.line)) for i in b.instrs],
                      lines=[shift(x) for x in b.lines],
                      term=replace(b.term, line=shift(b.term.line)))
              for b in info.blocks]
    return replace(info, blocks=blocks), org


def kernel_c(module, info, fname: str) -> str:
    """C source of one kernel's run function (Unsupported if any construct is not handled)."""
    if info.frames is not None:
        raise Unsupported("calls of recursive functions (the interpreter runs them)")
    syms, _, _ = symbols(module, info)
    ops = Operands(info.regs, syms, info.param_size + 16)
    ops.pvar_sizes = info.pvars
    blocks = info.blocks
    exit_blocks = {k for k, b in enumerate(blocks)
                   if not b.binders and b.term.kind == EXIT and b.term.guard is None}
    uni = Uniformity(blocks, [p.name for p in info.params], info.regs, syms)
    live_in, live_out = live_sets(blocks)
    fns = [_block_fn(fname, pc, blocks, ops, exit_blocks, module.name, uni, info.static_shared,
                     {k for k, name in enumerate(info.regs)
                      if name not in live_in[pc] and name not in live_out[pc]},
                     promotion(blocks, live_in, pc))
           for pc, blk in enumerate(blocks)]
    table = ", ".join(f"{fname}_b{pc}" for pc in range(len(blocks)))
    coll = ", ".join(str(int(warp_collective(b))) for b in blocks)
    zero = "".join(f"\n\t\t\tmemset(c->regs + {k}ull * c->reg_stride, 0, c->reg_stride);"
                   for k, name in enumerate(info.regs) if name in zeroed_at_start(blocks))
    return f"""{_STEP_MACROS}{"".join(fns)}
static int (*const {fname}_blocks[])(struct jctx *, int, int) = {{ {table} }};
/* blocks with a warp-collective instruction (the fairness step keeps their warps whole) */
static const uint8_t {fname}_coll[] = {{ {coll} }};

/* runs the slot until its budget is spent (0), its blocks are done (1), a fault (-1) or
   the end of a block (2: the caller runs the other slots' blocks before the next) */
static int {fname}_body(struct jctx *c)
{{
	const int n = c->nt;

	for (;;) {{
		int32_t pc;
		int full, r;
		if (!c->started) {{
			if (c->block >= c->block_end)
				return 1;
			c->rt->block_init(c);{zero}
		}}
		if (c->upc >= 0) {{
			pc = c->upc;
			full = c->nlive == n;
			if (!full && !c->act_ok)
				c->rt->live_lanes(c);
		}} else {{
			pc = c->rt->pick(c, {fname}_coll);
			if (pc < 0) {{
				c->started = 0;
				c->block += c->block_step;
				return c->left > 0 ? 2 : 0;
			}}
			full = c->upc >= 0 && c->nlive == n;
		}}
		if (pc >= {len(blocks)})
			return -1;
		r = {fname}_blocks[pc](c, full, c->nact);
		if (r < 0)
			return -1;
		c->left -= r;
		if (c->nlive == 0) {{	/* every lane exited: the block is done */
			c->upc = -1;
			c->started = 0;
			c->block += c->block_step;
			return c->left > 0 ? 2 : 0;
		}}
		if (c->left <= 0)
			return 0;
	}}
}}

void {fname}_run(struct jctx **cs, int n, int64_t budget)
{{
	cs[0]->rt->run_slots({fname}_body, cs, n, budget);
}}
"""
