"""Linking a kernel: device functions inlined at their call sites, names made unique.

A ``call`` is replaced by a copy of the callee's body whose registers and variables carry
the callee's prefix, whose formal ``.param``s are the caller's actual argument variables and
whose ``ret`` jumps to the instruction after the call.  Inlining in place keeps program
counters monotonic along the source, which is what min-PC scheduling needs to reconverge
after a divergent call.  Functions on a cycle of the call graph (recursion) are not
inlined: they get real calls (calls.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import calls
from .devrt import DEVRT_NAMES
from .errors import PtxError
from .syntax import (
    Addr,
    Function,
    Group,
    Imm,
    Instr,
    Label,
    ModuleAst,
    Not,
    Pair,
    Reg,
    Sym,
    VarDecl,
    Vec,
)

# calls to these extern functions are executed by the engine itself (device malloc/free:
# ops_heap.py, nvcc lowers new/delete to them, __nv_aligned_device_malloc to the third;
# the device runtime's: devrt.py)
HEAP_CALLS = {"malloc", "free", "__cuda_syscall_aligned_malloc"}
BUILTINS = {"vprintf", "__assertfail", "__assert_fail"} | HEAP_CALLS | DEVRT_NAMES
# statements of one kernel after inlining (the largest kernel of the repository has ~3 k):
# beyond, a tenant's module (calls fanning out in a chain, N levels of two calls each cost
# 2**N copies) is refused instead of exhausting memory
MAX_INLINED = 1 << 17
# "addresses" of device functions (function pointers) live in their own generic window
FUNC_BASE = 3 << 48


def function_addresses(mod: ModuleAst) -> dict[str, int]:
    """Deterministic address of every defined device function, for function pointers, and
    of every kernel (for the device runtime's launches: devrt.py)."""
    return {name: FUNC_BASE + 16 * k for k, name in enumerate(mod.functions)
            if mod.functions[name].defined}


@dataclass
class Linked:
    """The flat code of one kernel and every name it uses."""

    kernel: Function
    code: list = field(default_factory=list)          # Instr and Label
    regs: dict[str, str] = field(default_factory=dict)
    pvars: dict[str, int] = field(default_factory=dict)
    locals: list[VarDecl] = field(default_factory=list)
    shared: list[VarDecl] = field(default_factory=list)
    sites: int = 0
    frames: calls.FrameCode | None = None     # the recursive functions' region, if any


class Linker:
    """Builds a :class:`Linked` for one kernel of a module."""

    def __init__(self, mod: ModuleAst, name: str, shared: dict | None = None) -> None:
        self.mod = mod
        self.name = name
        self.scope = ""     # prefix of inlined names: calls.SCOPE inside the frame region
        # what every kernel's link of ``mod`` computes alike (the caller's dict, if given)
        self._shared = {} if shared is None else shared
        if "recursive" not in self._shared:
            self._shared["recursive"] = calls.recursive_functions(mod, self.taken())
        self.recursive: set[str] = self._shared["recursive"]

    def err(self, line: int, construct: str, msg: str) -> PtxError:
        """A PtxError at ``line`` naming ``construct``."""
        return PtxError(line, construct, msg, self.name)

    def link(self, kernel: Function) -> Linked:
        """Flatten ``kernel`` with every call inlined."""
        out = Linked(kernel)
        self.expand(out, kernel, "", {}, "", [kernel.name])
        calls.lay_out(self, out)
        return out

    def expand(self, out: Linked, fn: Function, prefix: str, formals: dict[str, str],
               suffix: str, stack: list[str], ret_label: str | Group | None = None) -> None:
        """Append ``fn``'s body to ``out.code`` with names renamed."""
        local_names = set(fn.regs) | set(fn.vars)

        def rn(name: str) -> str:
            if name in formals:
                return formals[name]
            return prefix + name if name in local_names else name

        for reg, t in fn.regs.items():
            out.regs[prefix + reg] = t
        for v in fn.vars.values():
            self.declare(out, v, prefix + v.name)
        labels = {lb.name for lb in fn.body if isinstance(lb, Label)}
        for st in fn.body:
            if isinstance(st, Label):
                out.code.append(Label(st.name + suffix, st.line))
                continue
            base = st.opcode.split(".")[0]
            guard = (rn(st.guard[0]), st.guard[1]) if st.guard else None
            if base == "call":
                self.call(out, st, rn, guard, stack)
                continue
            if base == "ret" and ret_label is not None:   # a Group: a recursive function's
                out.code.append(calls.frame_return(st, ret_label, guard)
                                if isinstance(ret_label, Group) else
                                Instr("bra.uni", [Sym(ret_label)], st.line, guard))
                continue
            args = [rename(a, rn, labels, suffix) for a in st.args]
            out.code.append(Instr(st.opcode, args, st.line, guard))

    def declare(self, out: Linked, v: VarDecl, name: str) -> None:
        """Record variable ``v`` of an inlined function under ``name``."""
        nv = VarDecl(v.space, name, v.type, v.align, v.count, v.init, v.line, v.extern, v.vec)
        if v.space == "param":
            out.pvars[name] = max(out.pvars.get(name, 0), nv.size)
        elif v.space == "local":
            out.locals.append(nv)
        elif v.space == "shared":
            out.shared.append(nv)
        else:
            raise self.err(v.line, v.name, f".{v.space} variable inside a function")

    def call(self, out: Linked, st: Instr, rn, guard, stack: list[str]) -> None:
        """Inline a direct call (or lower an indirect one) at ``st``."""
        args = list(st.args)
        rets: list = []
        if args and isinstance(args[0], Group):
            rets = list(args.pop(0).items)
        if not args or not isinstance(args[0], Sym | Reg):
            raise self.err(st.line, st.opcode, "malformed call")
        callee_op = args.pop(0)
        params: list = list(args.pop(0).items) if args and isinstance(args[0], Group) else []
        actual_rets = [self.param_name(st, a, rn) for a in rets]
        actual_params = [self.param_name(st, a, rn) for a in params]
        if isinstance(callee_op, Reg):
            return self.indirect(out, st, Reg(rn(callee_op.name)), actual_rets, actual_params,
                                 guard, stack)
        if args:
            raise self.err(st.line, st.opcode, "unexpected operand after a direct call")
        target = callee_op.name
        if target in BUILTINS:
            out.code.append(Instr(f"builtin.{target}",
                                  [Group(tuple(Sym(n) for n in actual_rets)),
                                   Group(tuple(Sym(n) for n in actual_params))], st.line, guard))
            return
        callee = self.mod.functions.get(target)
        if callee is None or not callee.defined:
            raise self.err(st.line, target, "call of an undefined or extern function")
        if guard is not None:
            raise self.err(st.line, st.opcode, "predicated calls are not supported")
        if target in self.recursive:
            return calls.emit_call(self, out, st, target, actual_rets, actual_params)
        if target in stack:
            raise self.err(st.line, target, "recursive calls are not supported")
        if len(actual_rets) != len(callee.rets) or len(actual_params) != len(callee.params):
            raise self.err(st.line, target, "argument count does not match the callee")
        out.sites += 1
        cont = f"$ret@{out.sites}"
        self.inline(out, callee, actual_rets, actual_params, stack, cont)
        out.code.append(Label(cont, st.line))

    def inline(self, out: Linked, callee: Function, rets, params, stack, cont: str) -> None:
        """Append a copy of ``callee`` whose ``ret`` jumps to label ``cont``."""
        if len(out.code) + len(callee.body) > MAX_INLINED:
            raise self.err(callee.line, callee.name, f"the kernel exceeds {MAX_INLINED} "
                                                     f"statements with its calls inlined")
        formals = {f.name: a for f, a in zip(callee.rets + callee.params, rets + params,
                                             strict=True)}
        self.expand(out, callee, f"{self.scope}{callee.name}::", formals, f"@{out.sites}",
                    stack + [callee.name], ret_label=cont)

    def indirect(self, out: Linked, st: Instr, target: Reg, rets, params, guard, stack):
        """A call through a function pointer: compare against every function whose address
        the module takes (with a matching signature) and branch to an inlined copy of it."""
        if guard is not None:
            raise self.err(st.line, st.opcode, "predicated calls are not supported")
        addrs = function_addresses(self.mod)
        cands = [f for f in self.mod.functions.values() if f.name in self.taken()
                 and f.name in addrs and f.kind == "func" and len(f.rets) == len(rets)
                 and len(f.params) == len(params)]
        out.sites += 1
        site = out.sites
        cont = f"$ret@{site}"
        pred = f"{self.scope}%icall@{site}"
        out.regs[pred] = "pred"
        for k, f in enumerate(cands):
            out.code.append(Instr("setp.eq.u64", [Reg(pred), target, Imm(addrs[f.name])],
                                  st.line))
            out.code.append(Instr("bra", [Sym(f"$icall@{site}.{k}")], st.line, (pred, False)))
        out.code.append(Instr("trap", [], st.line))   # not a known function: a device fault
        for k, f in enumerate(cands):
            out.code.append(Label(f"$icall@{site}.{k}", st.line))
            out.sites += 1
            if f.name in self.recursive:
                calls.emit_call(self, out, st, f.name, rets, params)
                out.code.append(Instr("bra.uni", [Sym(cont)], st.line))
                continue
            if f.name in stack:
                raise self.err(st.line, f.name, "recursive calls are not supported")
            self.inline(out, f, rets, params, stack, cont)
        out.code.append(Label(cont, st.line))

    def taken(self) -> set[str]:
        """Names of functions whose address some instruction takes (cached)."""
        if "taken" not in self._shared:
            names = set(self.mod.functions)
            taken = {a.name for fn in self.mod.functions.values() for ins in fn.body
                     if isinstance(ins, Instr) and not ins.opcode.startswith("call")
                     for a in ins.args if isinstance(a, Sym) and a.name in names}
            taken |= {x.name for v in self.mod.globals.values() for x in v.init or ()
                      if isinstance(x, Sym) and x.name in names}   # pointer tables
            self._shared["taken"] = taken
        return self._shared["taken"]

    def param_name(self, st: Instr, a, rn) -> str:
        """The (renamed) .param variable passed as call argument ``a``."""
        if isinstance(a, Sym):
            return rn(a.name)
        raise self.err(st.line, st.opcode, "call arguments must be .param variables")


def rename(a, rn, labels: set[str], suffix: str):
    """Operand ``a`` with register/variable names mapped by ``rn`` and labels suffixed."""
    if isinstance(a, Reg):
        return Reg(rn(a.name))
    if isinstance(a, Sym):
        if a.name in labels:
            return Sym(a.name + suffix, a.offset)
        return Sym(rn(a.name), a.offset)
    if isinstance(a, Addr):
        return Addr(rename(a.base, rn, labels, suffix) if a.base is not None else None,
                    a.offset)
    if isinstance(a, Vec):
        return Vec(tuple(rename(x, rn, labels, suffix) for x in a.items))
    if isinstance(a, Pair):
        return Pair(rename(a.first, rn, labels, suffix), rename(a.second, rn, labels, suffix))
    if isinstance(a, Not):
        return Not(rename(a.operand, rn, labels, suffix))
    if isinstance(a, Group):
        return Group(tuple(rename(x, rn, labels, suffix) for x in a.items))
    return a
