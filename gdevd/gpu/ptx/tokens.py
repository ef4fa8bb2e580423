"""Token-stream helpers and the instruction/operand grammar, shared by the PTX parser."""

from __future__ import annotations

from .errors import PtxError
from .lexer import Token
from .ptxtypes import parse_number
from .syntax import Addr, Function, Group, Imm, Instr, Not, Pair, Reg, Sink, Special, Sym, Vec

SPECIALS = ("%tid", "%ntid", "%ctaid", "%nctaid", "%laneid", "%warpid", "%nwarpid", "%smid",
            "%nsmid", "%gridid", "%clock", "%clock64", "%globaltimer", "%lanemask_eq",
            "%lanemask_le", "%lanemask_lt", "%lanemask_ge", "%lanemask_gt",
            "%dynamic_smem_size", "%total_smem_size", "%clock_hi", "%globaltimer_lo",
            "%globaltimer_hi", *(f"%envreg{k}" for k in range(32)),
            # a launch is a grid of clusters of one CTA each (state.py, jit/operands.py)
            "%clusterid", "%nclusterid", "%cluster_ctaid", "%cluster_nctaid",
            "%cluster_ctarank", "%cluster_nctarank", "%is_explicit_cluster", "%aggr_smem_size")
WARP_SZ = "WARP_SZ"


class TokenStream:
    """A cursor over tokens with the scoped name resolution of a function body."""

    name: str
    toks: list[Token]
    i: int
    scopes: list[dict[str, str]]
    fn: Function | None

    # -- token helpers -------------------------------------------------------------------
    def err(self, msg: str, tok: Token | None = None) -> PtxError:
        """A PtxError at ``tok`` (default: the next token)."""
        tok = tok or self.peek()
        return PtxError(tok.line, tok.text, msg, self.name)

    def peek(self, k: int = 0) -> Token:
        """The token ``k`` places ahead (an eof token past the end)."""
        j = self.i + k
        if j < len(self.toks):
            return self.toks[j]
        last = self.toks[-1].line if self.toks else 0
        return Token("eof", "<end of file>", last)

    def next(self) -> Token:
        """Consume and return the next token; fails at end of file."""
        tok = self.peek()
        if tok.kind == "eof":
            raise self.err("unexpected end of file")
        self.i += 1
        return tok

    def accept(self, text: str) -> bool:
        """Consume the next token if its text is ``text``."""
        if self.peek().text == text:
            self.i += 1
            return True
        return False

    def expect(self, text: str) -> Token:
        """Consume the next token, which must be ``text``."""
        tok = self.next()
        if tok.text != text:
            raise self.err(f"expected {text!r}", tok)
        return tok

    def ident(self) -> str:
        """Consume an identifier."""
        tok = self.next()
        if tok.kind != "id":
            raise self.err("expected an identifier", tok)
        return tok.text

    def integer(self) -> int:
        """Consume an optionally negative integer literal."""
        neg = self.accept("-")
        tok = self.next()
        if tok.kind != "num":
            raise self.err("expected a number", tok)
        v = parse_number(tok.text)
        if not isinstance(v, int):
            raise self.err("expected an integer", tok)
        return -v if neg else v

    # -- instructions ------------------------------------------------------------------
    def instruction(self) -> Instr:
        """An instruction with optional guard and operands."""
        line = self.peek().line
        guard = None
        if self.accept("@"):
            neg = self.accept("!")
            guard = (self.resolve(self.ident()), neg)
        opcode = self.ident()
        args = []
        try:
            if not self.accept(";"):
                args.append(self.operand())
                while self.accept(","):
                    args.append(self.operand())
                self.expect(";")
        except PtxError as exc:
            msg = exc.detail.split(": ", 1)[-1].rsplit(" (", 1)[0]
            raise PtxError(exc.line, opcode, f"malformed operands: {msg} at "
                           f"{exc.construct!r}", self.name) from None
        return Instr(opcode, args, line, guard)

    def operand(self):
        """One operand of an instruction."""
        tok = self.peek()
        t = tok.text
        if t == "[":
            return self.address()
        if t == "{":
            self.next()
            items = [self.operand()]
            while self.accept(","):
                items.append(self.operand())
            self.expect("}")
            return Vec(tuple(items))
        if t == "(":
            self.next()
            items = []
            while not self.accept(")"):
                items.append(self.operand())
                self.accept(",")
            return Group(tuple(items))
        if t == "!":
            self.next()
            return Not(self.operand())
        if t == "-" or tok.kind == "num":
            neg = self.accept("-")
            num = self.next()
            if num.kind != "num":
                raise self.err("expected a number", num)
            v = parse_number(num.text)
            return Imm(-v if neg else v)
        if tok.kind != "id":
            raise self.err("unexpected operand", tok)
        self.next()
        first = self.name_operand(t)
        if self.accept("|"):
            return Pair(first, self.name_operand(self.ident()))
        if isinstance(first, Sym) and self.peek().text == "+":
            self.next()
            return Sym(first.name, self.integer())
        if first == Sym(WARP_SZ):   # the ISA's predefined constant (``warpSize`` in CUDA)
            return Imm(32)
        return first

    def name_operand(self, t: str):
        """A named operand: register, special register, symbol or ``_``."""
        if t == "_":
            return Sink()
        base = t.split(".")[0]
        assert self.fn is not None
        if base in SPECIALS and self.resolve(t) == t and t not in self.fn.regs:
            return Special(t)
        u = self.resolve(t)
        if u in self.fn.regs:
            return Reg(u)
        return Sym(u)

    def address(self) -> Addr | Group:
        """A memory operand ``[base+offset]``, or a texture operand ``[obj, {coords}]``
        (``tex``), which is returned as ``Group((obj, Vec(coords)))`` so that every operand
        walker (register allocation, renaming, uniformity) sees its registers."""
        self.expect("[")
        base = None
        off = 0
        if self.peek().kind == "id":
            nm = self.next().text
            op = self.name_operand(nm)
            if self.accept(","):
                coords = self.operand()
                self.expect("]")
                return Group((op, coords))
            base = Sym(op.name) if isinstance(op, Sym) else op
        else:
            off = self.integer()
        while self.peek().text in ("+", "-"):
            sign = -1 if self.next().text == "-" else 1
            off += sign * self.integer()
        self.expect("]")
        return Addr(base, off)

    def resolve(self, name: str) -> str:
        """The unique name ``name`` refers to in the current scopes."""
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return name
