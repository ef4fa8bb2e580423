"""The parsed form of a PTX module (before linking and decoding)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True, frozen=True)
class Reg:
    """A register operand (name already made unique per scope)."""

    name: str


@dataclass(slots=True, frozen=True)
class Imm:
    """An immediate operand: Python int or float."""

    value: int | float


@dataclass(slots=True, frozen=True)
class Sym:
    """A symbol operand (variable, label or function), with a byte offset (``sym+8``)."""

    name: str
    offset: int = 0


@dataclass(slots=True, frozen=True)
class Special:
    """A special register such as ``%tid.x`` or ``%clock64``."""

    name: str


@dataclass(slots=True, frozen=True)
class Addr:
    """A memory operand ``[base+offset]``; ``base`` is a Reg, a Sym or None (absolute)."""

    base: Reg | Sym | None
    offset: int = 0


@dataclass(slots=True, frozen=True)
class Vec:
    """A vector operand ``{a, b, ...}``."""

    items: tuple


@dataclass(slots=True, frozen=True)
class Sink:
    """The bit bucket ``_``."""


@dataclass(slots=True, frozen=True)
class Pair:
    """Two destinations ``d|p`` (setp, shfl)."""

    first: object
    second: object


@dataclass(slots=True, frozen=True)
class Not:
    """A negated predicate operand ``!p``."""

    operand: object


@dataclass(slots=True, frozen=True)
class Group:
    """A parenthesized operand list of ``call``."""

    items: tuple


@dataclass(slots=True)
class VarDecl:
    """A variable in a state space (``.global .align 4 .b8 x[16] = {...}``)."""

    space: str
    name: str
    type: str
    align: int
    count: int | None          # array length, None for a scalar, 0 for ``x[]``
    init: list | None
    line: int
    extern: bool = False
    vec: int = 1
    linkage: str = ""          # "", "visible", "extern", "weak" or "common" (unitlink.py)
    managed: bool = False      # ``.attribute(.managed)``: a ``__managed__`` variable

    @property
    def size(self) -> int:
        """Size in bytes (0 for an unsized extern array)."""
        from .ptxtypes import size_of
        return size_of(self.type) * self.vec * (1 if self.count is None else self.count)


@dataclass(slots=True)
class Instr:
    """One instruction: ``opcode`` is the dotted mnemonic, ``guard`` ``(pred_reg, negated)``."""

    opcode: str
    args: list
    line: int
    guard: tuple[str, bool] | None = None


@dataclass(slots=True)
class Label:
    """A label statement."""

    name: str
    line: int


@dataclass(slots=True)
class Function:
    """An ``.entry`` or ``.func`` with its declarations and body."""

    name: str
    kind: str                       # "entry" or "func"
    params: list[VarDecl]
    rets: list[VarDecl]
    line: int
    body: list = field(default_factory=list)
    regs: dict[str, str] = field(default_factory=dict)        # unique reg name -> type
    vars: dict[str, VarDecl] = field(default_factory=dict)    # .local/.shared/.param inside
    extern: bool = False
    defined: bool = False
    linkage: str = ""                # of the definition, else of the declaration
    directives: dict[str, list[int]] = field(default_factory=dict)


@dataclass(slots=True)
class ModuleAst:
    """A whole parsed module."""

    version: str
    target: list[str]
    address_size: int
    globals: dict[str, VarDecl]
    functions: dict[str, Function]
