"""Real calls for recursive device functions (the linker's side; callstack.py runs them).

The linker inlines every call (linker.py) except calls of a function that lies on a cycle
of the call graph (a strongly connected component with more than one function, or one
function calling itself; indirect calls count as calls of every function whose address the
module takes).  Inlining those would never end, so each of them is laid out once, after the
kernel's own code, as the *frame region*:

* the region is ``~f:`` (entry label) then ``f``'s body for every recursive function ``f``
  the kernel reaches, with its non-recursive callees inlined into it as usual;
* every register, ``.param`` and ``.local`` variable of the region is named with the
  scope ``~`` (``~f::%r1``, ``~g::param0``); nothing outside the region has such a name,
  so the kernel's registers never share an array with the region's;
* a call of a recursive function becomes ``call.frame ~f, (rets), (params), (formal
  params)``: a terminator that saves the region's registers and ``.param`` variables for
  the calling threads, copies the arguments and jumps to ``~f``;
* the function's ``ret`` becomes ``ret.frame (formal rets)``: the returning threads restore
  what their call saved and continue after it, with the return values in the call's
  argument variables;
* the region's ``.local`` variables live in the activation's frame: each reference to one
  becomes ``~fp`` (the frame's address, set per thread by the call) plus its offset in the
  frame, so every activation has its own depot.

Since a call saves and restores every register of the region, a call is transparent to the
caller's registers: liveness (and so register coalescing, regalloc.py) treats it as a plain
instruction, within the region and outside it, as long as the two are coalesced apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import PtxError
from .regalloc import coalesce
from .syntax import Addr, Group, Instr, Label, ModuleAst, Reg, Sym, VarDecl

SCOPE = "~"                 # names of the frame region start with it
FP = "~fp"                  # a thread's current frame address in its local window
CALL_OP = "call.frame"
RET_OP = "ret.frame"


@dataclass
class FrameCode:
    """Where the frame region starts in the linked code, and its ``.local`` variables."""

    start: int = 0
    first: str = ""                                        # the region's first label
    locals: list[VarDecl] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)       # reached, not laid out yet
    laid_out: set[str] = field(default_factory=set)


def entry_label(name: str) -> str:
    """The label of recursive function ``name``'s entry in the frame region."""
    return f"{SCOPE}{name}:"


def recursive_functions(mod: ModuleAst, taken: set[str]) -> set[str]:
    """Names of the defined functions on a cycle of the call graph (``taken``: functions
    whose address is taken, the targets of any indirect call)."""
    graph: dict[str, list[str]] = {}
    for name, fn in mod.functions.items():
        if not fn.defined:
            continue
        out: set[str] = set()
        for ins in fn.body:
            if isinstance(ins, Instr) and ins.opcode.split(".")[0] == "call":
                out |= _callees(ins, taken)
        graph[name] = sorted(n for n in out if n in mod.functions and
                             mod.functions[n].defined)
    found: set[str] = set()
    for comp in _components(graph):
        if len(comp) > 1 or comp[0] in graph[comp[0]]:
            found.update(comp)
    return found


def _callees(ins: Instr, taken: set[str]) -> set[str]:
    args = [a for a in ins.args if not isinstance(a, Group)]
    if args and isinstance(args[0], Sym):
        return {args[0].name}
    return set(taken) if args and isinstance(args[0], Reg) else set()


def _components(graph: dict[str, list[str]]) -> list[list[str]]:
    """Strongly connected components (Tarjan's algorithm, iterative: a tenant's chain of
    thousands of functions must not exhaust the interpreter's stack)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on: set[str] = set()
    stack: list[str] = []
    comps: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = len(index)
                stack.append(v)
                on.add(v)
            if i < len(graph[v]):
                work.append((v, i + 1))
                w = graph[v][i]
                if w not in index:
                    work.append((w, 0))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                comps.append(comp)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return comps


def emit_call(linker, out, st: Instr, target: str, rets: list[str], params: list[str]) -> None:
    """Append a real call of recursive function ``target`` (``rets``/``params``: the
    caller's argument variables, already renamed)."""
    callee = linker.mod.functions[target]
    if len(rets) != len(callee.rets) or len(params) != len(callee.params):
        raise linker.err(st.line, target, "argument count does not match the callee")
    frames = out.frames if out.frames is not None else FrameCode()
    out.frames = frames
    if target not in frames.laid_out and target not in frames.pending:
        frames.pending.append(target)
    formals = [_formal(target, p.name) for p in callee.params]
    out.code.append(Instr(CALL_OP, [Sym(entry_label(target)), _group(rets), _group(params),
                                    _group(formals)], st.line))


def _formal(fn: str, name: str) -> str:
    return f"{SCOPE}{fn}::{name}"


def _group(names) -> Group:
    return Group(tuple(Sym(n) for n in names))


def lay_out(linker, out) -> None:
    """Append the frame region for every recursive function the code reached (see the
    module docstring)."""
    frames = out.frames
    if frames is None:
        return
    # the kernel's code must not fall into the region
    out.code.append(Instr("exit", [], out.kernel.line))
    frames.start = len(out.code)
    frames.first = entry_label(frames.pending[0])
    first_local = len(out.locals)
    linker.scope = SCOPE
    out.regs[FP] = "b64"
    while frames.pending:
        name = frames.pending.pop(0)
        frames.laid_out.add(name)
        fn = linker.mod.functions[name]
        prefix = f"{SCOPE}{name}::"
        formals = {p.name: prefix + p.name for p in fn.rets + fn.params}
        for p in fn.rets + fn.params:
            out.pvars[prefix + p.name] = max(out.pvars.get(prefix + p.name, 0), p.size)
        out.code.append(Label(entry_label(name), fn.line))
        out.sites += 1
        linker.expand(out, fn, prefix, formals, f"@{SCOPE}{out.sites}", [name],
                      ret_label=Group(tuple(Sym(prefix + r.name) for r in fn.rets)))
        out.code.append(Instr(RET_OP, [_group(prefix + r.name for r in fn.rets)], fn.line))
    frames.locals = out.locals[first_local:]
    del out.locals[first_local:]
    names = {v.name for v in frames.locals}
    if names:
        out.code[frames.start:] = _rewrite_locals(out, out.code[frames.start:], names)


def frame_return(st: Instr, ret_label: Group, guard) -> Instr:
    """The ``ret`` of a recursive function's own body (``ret_label``: its formal rets)."""
    return Instr(RET_OP, [ret_label], st.line, guard)


def _rewrite_locals(out, code: list, names: set[str]) -> list:
    """Every operand naming a frame ``.local`` variable becomes a register holding ``~fp``
    plus the variable's offset in the frame (computed just before the instruction)."""
    result: list = []
    for item in code:
        if not isinstance(item, Instr):
            result.append(item)
            continue
        temps: list[Instr] = []

        def fix(a, temps=temps, line=item.line):
            if isinstance(a, Sym) and a.name in names:
                reg = Reg(f"{FP}{len(temps) // 2}")
                out.regs[reg.name] = "b64"
                temps.append(Instr("mov.u64", [reg, a], line))
                temps.append(Instr("add.u64", [reg, reg, Reg(FP)], line))
                return reg
            if isinstance(a, Addr) and isinstance(a.base, Sym) and a.base.name in names:
                return Addr(fix(a.base), a.offset)
            if isinstance(a, Group):
                return Group(tuple(fix(x) for x in a.items))
            return a
        args = [fix(a) for a in item.args]
        result += temps + [Instr(item.opcode, args, item.line, item.guard)]
    return result


def coalesce_linked(linked) -> tuple[list, dict[str, str]]:
    """Coalesced code and registers of ``linked``: the kernel's code and the frame region
    apart (their registers must never share an array, see the module docstring); ``~fp``
    is set by the engine, so it keeps its name."""
    if linked.frames is None:
        return coalesce(linked.code, linked.regs)
    start = linked.frames.start
    kernel = {r: t for r, t in linked.regs.items() if not r.startswith(SCOPE)}
    region = {r: t for r, t in linked.regs.items() if r.startswith(SCOPE) and r != FP}
    code_k, regs_k = coalesce(linked.code[:start], kernel)
    code_r, regs_r = coalesce(linked.code[start:], region)
    linked.frames.start = len(code_k)
    return code_k + code_r, {**regs_k, **regs_r, FP: "b64"}


def check_region(blocks, start: int, module: str, kernel: str) -> None:
    """Refuse warp-collective instructions and block barriers in recursive functions: the
    threads of a warp or block may be at different depths of the recursion there, where
    the engine cannot make them meet exactly."""
    from .program import BAR, warp_collective
    for blk in blocks[start:]:
        if warp_collective(blk) or blk.term.kind == BAR:
            line = blk.term.line or (blk.lines[0] if blk.lines else 0)
            raise PtxError(line, kernel, "barriers and warp-collective instructions inside "
                           "a recursive function are not supported", module)
