"""Recursive-descent parser: PTX tokens -> :class:`ModuleAst`.

Names declared in nested ``{ }`` scopes of a function body (callseq ``.param`` blocks, inline
asm temporaries) are renamed to be unique within the function, so that later stages see one
flat namespace per function.
"""

from __future__ import annotations

from .errors import PtxError
from .lexer import tokenize
from .ptxtypes import TYPE_NAMES, parse_number
from .syntax import Function, Label, ModuleAst, Sym, VarDecl
from .tokens import TokenStream

SPACES = ("global", "const", "shared", "local", "param", "reg")
_LINKAGES = (".visible", ".extern", ".weak", ".common")
_PERF = (".maxntid", ".reqntid", ".minnctapersm", ".maxnreg", ".maxnctapersm",
         ".noreturn", ".explicitcluster", ".reqnctapercluster", ".maxclusterrank")


class Parser(TokenStream):
    """Parses one module; see :func:`parse`."""

    def __init__(self, text: str, name: str) -> None:
        self.name = name
        self.toks = tokenize(text, name)
        self.i = 0
        self.scopes: list[dict[str, str]] = []
        self.fn: Function | None = None
        self.uniq = 0

    # -- module level ----------------------------------------------------------------------
    def parse(self) -> ModuleAst:
        """The whole module."""
        mod = ModuleAst("", [], 64, {}, {})
        while self.peek().kind != "eof":
            self.top_level(mod)
        if not mod.version:
            raise PtxError(1, ".version", "missing .version directive", self.name)
        return mod

    def top_level(self, mod: ModuleAst) -> None:
        """One module-level directive or declaration."""
        tok = self.next()
        t = tok.text
        if t == ".version":
            mod.version = self.next().text
        elif t == ".target":
            mod.target.append(self.ident())
            while self.accept(","):
                mod.target.append(self.ident())
        elif t == ".address_size":
            mod.address_size = self.integer()
            if mod.address_size != 64:
                raise self.err("only .address_size 64 is supported", tok)
        elif t == ".section":
            self.skip_section()
        elif t == ".pragma":
            self.next()
            self.expect(";")
        elif t in _LINKAGES or t in (".entry", ".func", ".global", ".const", ".shared",
                                     ".alias"):
            self.i -= 1
            self.declaration(mod)
        else:
            raise self.err("unsupported module-level directive", tok)

    def skip_section(self) -> None:
        """Skip a ``.section name { ... }`` debug block."""
        self.ident()
        self.expect("{")
        depth = 1
        while depth:
            t = self.next().text
            depth += (t == "{") - (t == "}")

    def declaration(self, mod: ModuleAst) -> None:
        """A function or module variable with its linkage qualifiers (``.extern`` wins, then
        ``.weak``, ``.common``, ``.visible``; none: internal to the module)."""
        quals = set()
        while self.peek().text in _LINKAGES:
            quals.add(self.next().text[1:])
        linkage = next((q for q in ("extern", "weak", "common", "visible") if q in quals), "")
        t = self.peek().text
        if t in (".entry", ".func"):
            self.function(mod, linkage)
        elif t in (".global", ".const", ".shared"):
            for v in self.var_decl():
                v.extern, v.linkage = linkage == "extern", linkage
                old = mod.globals.get(v.name)
                if old is None or old.extern:   # a declaration never hides the definition
                    mod.globals[v.name] = v
        else:
            raise self.err("unsupported declaration")

    # -- functions -------------------------------------------------------------------------
    def function(self, mod: ModuleAst, linkage: str) -> None:
        """An ``.entry``/``.func`` header with its body or a prototype."""
        extern = linkage == "extern"
        kind = self.next().text[1:]
        line = self.peek().line
        rets: list[VarDecl] = []
        if kind == "func" and self.peek().text == "(":
            rets = self.param_list()
        name = self.ident()
        params = self.param_list() if self.peek().text == "(" else []
        fn = mod.functions.get(name) or Function(name, kind, params, rets, line, extern=extern,
                                                 linkage=linkage)
        fn.params, fn.rets, fn.line = params, rets, line
        mod.functions[name] = fn
        while self.peek().text in _PERF:
            d = self.next().text
            vals = []
            while self.peek().kind == "num":
                vals.append(self.integer())
                self.accept(",")
            fn.directives[d] = vals
        if self.accept(";"):
            return
        if fn.defined:
            raise self.err(f"function {name} defined twice")
        fn.defined, fn.linkage = True, linkage
        self.body(fn)

    def param_list(self) -> list[VarDecl]:
        """A parenthesized parameter list."""
        self.expect("(")
        out: list[VarDecl] = []
        while not self.accept(")"):
            out.extend(self.var_decl(in_list=True))
            self.accept(",")
        return out

    def body(self, fn: Function) -> None:
        """A function body ``{ ... }``."""
        self.fn = fn
        self.scopes = [{p.name: p.name for p in fn.params + fn.rets}]
        self.expect("{")
        self.scopes.append({})
        while not self.accept("}"):
            self.statement(fn)
        self.fn = None

    def statement(self, fn: Function) -> None:
        """One body statement: scope, declaration, label or instruction."""
        tok = self.peek()
        t = tok.text
        if t == "{":
            self.next()
            self.scopes.append({})
            while not self.accept("}"):
                self.statement(fn)
            self.scopes.pop()
        elif t in (".reg", ".local", ".shared", ".param"):
            for v in self.var_decl():
                self.declare_local(fn, v)
        elif t == ".pragma":
            self.next()
            self.next()
            self.expect(";")
        elif tok.kind == "id" and self.peek(1).text == ":" and t[0] != ".":
            self.next()
            self.next()
            if self.peek().text == ".callprototype":   # a call prototype: types only
                while self.next().text != ";":
                    pass
                return
            fn.body.append(Label(t, tok.line))
        elif tok.kind == "id" or t == "@":
            fn.body.append(self.instruction())
        else:
            raise self.err("unexpected token in function body", tok)

    def declare_local(self, fn: Function, v: VarDecl) -> None:
        """Declare ``v`` in the current scope (renamed if nested)."""
        unique = v.name
        if len(self.scopes) > 2 or unique in fn.regs or unique in fn.vars:
            self.uniq += 1
            unique = f"{v.name}${self.uniq}"
        self.scopes[-1][v.name] = unique
        v.name = unique
        if v.space == "reg":
            fn.regs[unique] = v.type
        else:
            fn.vars[unique] = v


    # -- declarations --------------------------------------------------------------------
    def var_decl(self, in_list: bool = False) -> list[VarDecl]:
        """A variable declaration (one or more declarators)."""
        line = self.peek().line
        space = self.next().text.lstrip(".")
        if space not in SPACES:
            raise self.err("expected a state space", self.toks[self.i - 1])
        align, vec, typ, managed = 0, 1, None, False
        while self.peek().text.startswith("."):
            d = self.next().text
            if d == ".align":
                align = self.integer()
            elif d in (".v2", ".v4", ".v8"):
                vec = int(d[2:])
            elif d[1:] in TYPE_NAMES:
                typ = d[1:]
            elif d in (".ptr", ".global", ".const", ".shared", ".local", ".volatile"):
                pass
            elif d == ".attribute":
                managed = self.var_attributes() or managed
            else:
                raise self.err("unsupported variable qualifier", self.toks[self.i - 1])
        if typ is None:
            raise self.err("variable without a type")
        out = []
        while True:
            out.extend(self.declarator(space, typ, align, vec, line))
            if in_list or not self.accept(","):
                break
        if not in_list:
            self.expect(";")
        for v in out:
            v.managed = managed
        return out

    def var_attributes(self) -> bool:
        """``.attribute(.managed)`` (a ``__managed__`` variable: to the engines an ordinary
        global, which the daemon places in memory the host maps, api_module.py) or
        ``.attribute(.unified(a, b))``; anything else is rejected.  True for ``.managed``."""
        self.expect("(")
        what = self.next().text
        if what == ".unified" and self.accept("("):
            while not self.accept(")"):
                self.next()
        elif what != ".managed":
            raise self.err("unsupported variable attribute", self.toks[self.i - 1])
        self.expect(")")
        return what == ".managed"

    def declarator(self, space, typ, align, vec, line) -> list[VarDecl]:
        """One declarator: name, ``<N>`` range, array dims, initializer."""
        name = self.ident()
        if self.accept("<"):
            n = self.integer()
            self.expect(">")
            return [VarDecl(space, f"{name}{k}", typ, align, None, None, line, vec=vec)
                    for k in range(n)]
        count = None
        while self.accept("["):
            dim = 0 if self.peek().text == "]" else self.integer()
            count = dim if count is None else count * dim
            self.expect("]")
        init = None
        if self.accept("="):
            init = self.initializer()
        return [VarDecl(space, name, typ, align, count, init, line, vec=vec)]

    def initializer(self) -> list:
        """A scalar or brace-list initializer, flattened."""
        if self.accept("{"):
            out: list = []
            while not self.accept("}"):
                out.extend(self.initializer())
                self.accept(",")
            return out
        tok = self.peek()
        if tok.kind == "id":        # a symbol's address (module.py allows functions')
            generic = tok.text == "generic" and self.peek(1).text == "("
            if generic:
                self.next()
                self.next()
            sym = Sym(self.ident())
            if generic:
                self.expect(")")
            return [sym]
        neg = self.accept("-")
        tok = self.next()
        if tok.kind != "num":
            raise self.err("expected a constant initializer", tok)
        v = parse_number(tok.text)
        return [-v if neg else v]

def parse(text: str, name: str = "<ptx>") -> ModuleAst:
    """Parse PTX ``text``; raises PtxError (with line and construct) on malformed input."""
    return Parser(text, name).parse()
