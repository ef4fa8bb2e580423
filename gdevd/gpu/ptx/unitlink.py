"""Linking several PTX translation units into one module, as ``nvlink`` links relocatable
device code (``nvcc -rdc=true``, ``cuLinkAddData`` of several inputs).

Each input is parsed and lowered on its own; then its module-scope symbols (functions and
``.global``/``.const``/``.shared`` variables) are resolved across the inputs by linkage:

* ``.visible`` is a strong definition: two of one name are an error naming both inputs;
* ``.weak`` (inline and template functions) and ``.common`` yield to a strong definition;
  among themselves the first ``.weak`` wins, and of ``.common`` ones the largest;
* ``.extern`` (and a prototype never defined) is a reference: it takes the chosen
  definition of its name, which must be of the same kind (a function with as many
  parameters and results, a variable in the same state space); a reference nothing defines
  is an error naming it and its input, except PTX's system calls (``vprintf``,
  ``__assertfail``, ``malloc``, ``free``: :data:`SYSCALLS`), which the driver provides, and
  ``.extern .shared`` arrays, which stay the kernel's dynamic shared memory;
* a symbol without linkage is internal to its input: where its name is also used by another
  input, it is renamed (``name$uK`` for input K) in that input only, so two units'
  ``static`` functions or variables of one name stay apart.

The module header takes the highest ``.version`` and ``.target`` architecture of the inputs
(the other target options merged); ``.address_size`` must agree.  The linked module is an
ordinary :class:`~.module.Module`: kernels, data layout, inlining and both engines work on it
as on one parsed text.

Bounds (every input is a tenant's): at most :data:`MAX_INPUTS` inputs; names quoted in
errors are cut to :data:`NAME_SHOWN` characters; the work is linear in the inputs' size.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from . import devlib
from .errors import PtxError
from .linker import BUILTINS, rename
from .lower import lower
from .module import Module
from .parser import parse
from .syntax import Function, Instr, Label, ModuleAst, Sym, VarDecl

MAX_INPUTS = 256
# PTX's system calls: the driver provides them, so they need no definition (the engine runs
# vprintf and __assertfail, devlib.py the rest; a kernel calling malloc or free fails at load,
# as in one module)
SYSCALLS = BUILTINS | devlib.NAMES | {"malloc", "free"}
NAME_SHOWN = 120
_SM = re.compile(r"sm_(\d+)([a-z]?)$")


@dataclass
class _Sym:
    """One module-scope symbol of one input."""

    unit: int
    obj: Function | VarDecl

    @property
    def is_function(self) -> bool:
        return isinstance(self.obj, Function)

    @property
    def linkage(self) -> str:
        if isinstance(self.obj, Function):
            return self.obj.linkage if self.obj.defined else "extern"
        return self.obj.linkage

    @property
    def line(self) -> int:
        return self.obj.line


def shown(name: str) -> str:
    """``name`` cut for an error message."""
    return name if len(name) <= NAME_SHOWN else name[:NAME_SHOWN] + "..."


def link_units(units: Sequence[tuple[str, str]], name: str | None = None) -> Module:
    """One module from the PTX texts ``units`` (``(input name, text)`` pairs, in link order),
    named ``name`` (default: the inputs' names joined by ``+``, cut as in errors).

    Raises PtxError (EINVAL) naming the input, the line and the symbol: a unit that does not
    parse, duplicate strong definitions, an unresolved reference, a reference of the wrong
    kind, disagreeing ``.address_size``, more than :data:`MAX_INPUTS` inputs or none."""
    names = [u for u, _ in units]
    name = name or shown("+".join(names)) or "<linked>"
    if not units:
        raise PtxError(0, "link", "nothing to link", name)
    if len(units) > MAX_INPUTS:
        raise PtxError(0, "link", f"{len(units)} inputs (at most {MAX_INPUTS})", name)
    asts = [lower(parse(text, u), u) for u, text in units]
    merged = _Linking(asts, names).merge()
    return Module(merged, name, link_key(units))


def link_key(units: Sequence[tuple[str, str]]) -> str:
    """The text the compiled engine's cache keys a linked module by (the inputs in order)."""
    return "".join(f"//gdev-link-input {len(t)} {u!r}\n{t}\n" for u, t in units)


class _Linking:
    """The state of one link: inputs, their symbols, chosen definitions, renames."""

    def __init__(self, asts: list[ModuleAst], names: list[str]) -> None:
        self.asts, self.names = asts, names
        self.syms: dict[str, list[_Sym]] = {}
        self.of: dict[int, _Sym] = {}          # id(Function or VarDecl) -> its symbol
        for k, ast in enumerate(asts):
            for obj in _symbols(ast):
                s = self.of[id(obj)] = _Sym(k, obj)
                self.syms.setdefault(obj.name, []).append(s)

    def err(self, s: _Sym, name: str, msg: str) -> PtxError:
        return PtxError(s.line, shown(name), msg, self.names[s.unit])

    def merge(self) -> ModuleAst:
        """The linked module (see the module docstring)."""
        out = ModuleAst(*self.header(), {}, {})
        chosen = {n: self.resolve(n, ss) for n, ss in self.syms.items()
                  if any(s.linkage != "" for s in ss)}
        for ast, renames in zip(self.asts, self.renames(), strict=True):
            _apply(ast, renames)
            for obj in _symbols(ast):
                sym = self.of[id(obj)]
                self.place(out, sym, chosen.get(obj.name) if sym.linkage else sym)
        return out

    def header(self) -> tuple[str, list[str], int]:
        """(version, target, address size) of the linked module."""
        sizes = {a.address_size for a in self.asts}
        if len(sizes) > 1:
            raise PtxError(0, ".address_size", f"inputs disagree: {sorted(sizes)}",
                           self.names[0])
        version = max((a.version for a in self.asts), key=_version_key)
        sms = [t for a in self.asts for t in a.target if _SM.match(t)]
        others = [t for a in self.asts for t in a.target if not _SM.match(t)]
        target = [max(sms, key=_sm_key)] if sms else []
        return version, target + list(dict.fromkeys(others)), sizes.pop()

    def resolve(self, name: str, ss: list[_Sym]) -> _Sym | None:
        """The definition references to ``name`` take (None: none, allowed ones only)."""
        defs = [s for s in ss if s.linkage in ("visible", "weak", "common")]
        strong = [s for s in defs if s.linkage == "visible"]
        if len(strong) > 1:
            a, b = strong[:2]
            raise self.err(b, name, f"duplicate definition of {shown(name)!r}: defined in "
                                    f"{self.names[a.unit]} and {self.names[b.unit]}")
        common = [s for s in defs if s.linkage == "common"]
        best = strong[0] if strong else (max(common, key=_size)
                                         if common else defs[0] if defs else None)
        for s in ss:
            if s.linkage == "extern":
                self.check_reference(name, s, best)
        return best

    def check_reference(self, name: str, ref: _Sym, best: _Sym | None) -> None:
        """``ref`` (an extern declaration) must find a definition of its kind."""
        if best is None:
            if ref.is_function and name in SYSCALLS:
                return
            if isinstance(ref.obj, VarDecl) and ref.obj.space == "shared":
                return                          # dynamic shared memory
            raise self.err(ref, name, _unresolved(name, self.names[ref.unit]))
        if ref.is_function != best.is_function:
            raise self.err(ref, name, f"{shown(name)!r} is a "
                                      f"{'function' if ref.is_function else 'variable'} "
                                      f"here but not in {self.names[best.unit]}")
        a, b = ref.obj, best.obj
        if isinstance(a, Function) and isinstance(b, Function):
            if (len(a.params), len(a.rets)) != (len(b.params), len(b.rets)):
                raise self.err(ref, name, f"declared with {len(a.params)} parameters and "
                                          f"{len(a.rets)} results, defined in "
                                          f"{self.names[best.unit]} with {len(b.params)} "
                                          f"and {len(b.rets)}")
        elif isinstance(a, VarDecl) and isinstance(b, VarDecl) and a.space != b.space:
            raise self.err(ref, name, f"declared .{a.space}, defined .{b.space} in "
                                      f"{self.names[best.unit]}")

    def renames(self) -> list[dict[str, str]]:
        """Per input, new names for its internal symbols whose name another input uses (one
        pass over the symbols: linear however many inputs)."""
        out: list[dict[str, str]] = [{} for _ in self.asts]
        taken = set(self.syms)
        for n, ss in self.syms.items():
            if len({s.unit for s in ss}) < 2:
                continue
            for s in ss:
                if s.linkage == "":
                    new, j = f"{n}$u{s.unit}", 0
                    while new in taken:
                        j += 1
                        new = f"{n}$u{s.unit}.{j}"
                    taken.add(new)
                    out[s.unit][n] = new
        return out

    def place(self, out: ModuleAst, sym: _Sym, chosen: _Sym | None) -> None:
        """Put ``sym`` in ``out`` if it is what its name resolves to (or an allowed
        reference nothing defines, once)."""
        obj = sym.obj
        table: dict = out.functions if isinstance(obj, Function) else out.globals
        if chosen is sym or (chosen is None and obj.name not in table):
            table[obj.name] = obj


def _symbols(ast: ModuleAst) -> list[Function | VarDecl]:
    """The module-scope symbols of ``ast``: variables, then functions."""
    return [*ast.globals.values(), *ast.functions.values()]


def _size(s: _Sym) -> int:
    return s.obj.size if isinstance(s.obj, VarDecl) else 0


def _unresolved(name: str, unit: str) -> str:
    why = f"unresolved reference to {shown(name)!r} (declared extern in {unit}, defined " \
          f"by no input)"
    if name.startswith(("cudaLaunchDevice", "cudaGetParameterBuffer", "cudaCGGet",
                        "cudaDeviceSynchronize", "cudaStream", "cudaEvent")):
        why += ": the CUDA device runtime (dynamic parallelism) is not supported"
    return why


def _apply(ast: ModuleAst, renames: dict[str, str]) -> None:
    """Rename module-scope symbols of one input in place: their declarations and every
    operand naming them (names local to a function shadow them)."""
    if not renames:
        return
    ast.globals = {renames.get(n, n): v for n, v in ast.globals.items()}
    for v in ast.globals.values():
        v.name = renames.get(v.name, v.name)
        if v.init:      # function addresses in pointer tables
            v.init = [Sym(renames.get(x.name, x.name)) if isinstance(x, Sym) else x
                      for x in v.init]
    ast.functions = {renames.get(n, n): f for n, f in ast.functions.items()}
    for fn in ast.functions.values():
        fn.name = renames.get(fn.name, fn.name)
        local = set(fn.regs) | set(fn.vars) | {p.name for p in fn.params + fn.rets}
        labels = {s.name for s in fn.body if isinstance(s, Label)}

        def rn(n: str, local=local) -> str:
            return n if n in local else renames.get(n, n)

        fn.body = [s if isinstance(s, Label) else
                   Instr(s.opcode, [rename(a, rn, labels, "") for a in s.args], s.line,
                         s.guard) for s in fn.body]


def _version_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split(".") if x.isdigit())


def _sm_key(t: str) -> tuple[int, str]:
    m = _SM.match(t)
    return (int(m[1]), m[2]) if m else (0, "")
