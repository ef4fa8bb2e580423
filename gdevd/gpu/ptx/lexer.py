"""Tokenizer for PTX text: comments stripped, line numbers kept on every token."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import PtxError

_TOKEN = re.compile(
    r"""(?P<ws>[ \t\r\f\v]+)
    |(?P<nl>\n)
    |(?P<lc>//[^\n]*)
    |(?P<bc>/\*.*?\*/)
    |(?P<str>"(?:[^"\\\n]|\\.)*")
    |(?P<num>0[fF][0-9a-fA-F]{8}(?![\w$.])|0[dD][0-9a-fA-F]{16}(?![\w$.])
       |0[xX][0-9a-fA-F]+[uU]?|0[bB][01]+[uU]?|\d+\.\d*(?:[eE][+-]?\d+)?
       |\d+[eE][+-]?\d+|\d+[uU]?)
    |(?P<id>[%.$_a-zA-Z](?:[\w$.]|::(?=[\w$]))*)
    |(?P<p>[{}\[\]();,:<>+\-=!|@*/&~^?])
    """,
    re.VERBOSE | re.DOTALL,
)

# Debug-info statements end at the end of their line, without a semicolon.
_LINE_DIRECTIVES = re.compile(r"^[ \t]*\.(loc|file)\b[^\n]*", re.MULTILINE)


@dataclass(slots=True)
class Token:
    """One token: ``kind`` is ``num``, ``id``, ``str`` or ``p`` (punctuation)."""

    kind: str
    text: str
    line: int


def tokenize(text: str, name: str = "<ptx>") -> list[Token]:
    """Split PTX ``text`` into tokens; raises PtxError naming the line of a stray character."""
    text = _LINE_DIRECTIVES.sub("", text)
    out: list[Token] = []
    line = 1
    pos = 0
    n = len(text)
    while pos < n:
        m = _TOKEN.match(text, pos)
        if m is None:
            raise PtxError(line, text[pos:pos + 10], "unexpected character", name)
        kind = m.lastgroup or ""
        tok = m.group()
        if kind == "nl":
            line += 1
        elif kind == "bc":
            line += tok.count("\n")
        elif kind == "id" and tok[0] == "." and "." in tok[1:]:
            # ".reg.b32" (inline asm writes directives without spaces)
            out.extend(Token("id", "." + part, line) for part in tok[1:].split("."))
        elif kind not in ("ws", "lc"):
            out.append(Token(kind, tok, line))
        pos = m.end()
    return out
