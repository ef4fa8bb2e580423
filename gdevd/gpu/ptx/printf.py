"""Device ``printf`` (CUDA's ``vprintf``): formatting one call, as the host runtime would.

nvcc turns ``printf(fmt, ...)`` into ``vprintf(fmt, buf)``: ``fmt`` the generic address of
the format string, ``buf`` the generic address of a local buffer holding the arguments, each
at an offset aligned to its own size (C's promotions applied: ``float`` arrives as ``double``,
``char``/``short`` as ``int``).  :func:`format_call` reads the format and its arguments
through two readers and returns the text and the number of arguments (CUDA's return value).

The conversions are C's (``d i u o x X c s p f F e E g G a A %``, flags ``-+ #0``, width and
precision, ``*`` taking an ``int`` argument, length ``hh h l ll z j t``); ``%n`` writes
nothing and prints nothing; an unknown conversion is copied as it stands.  Bytes of the format
and of ``%s`` strings are passed through unchanged (no encoding is assumed).  A format or a
string is read up to MAX_STRING bytes, a call prints at most MAX_ARGS arguments (CUDA: 32).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable

MAX_STRING = 4096
MAX_ARGS = 32
_SPEC = re.compile(rb"%([-+ #0]*)(\*|\d+)?(?:\.(\*|\d*))?(hh|h|ll|l|z|j|t|L)?"
                   rb"([diouxXcspfFeEgGaAn%])?")
_WIDE = {b"l", b"ll", b"z", b"j", b"t"}

ReadArgs = Callable[[int, int], bytes]     # (offset in the argument buffer, size) -> bytes
ReadString = Callable[[int], bytes]        # generic address -> bytes up to NUL (bounded)


class _Args:
    """The argument buffer, read in order with C's natural alignment."""

    def __init__(self, read: ReadArgs) -> None:
        self.read, self.offset, self.count = read, 0, 0

    def take(self, size: int) -> bytes:
        self.offset = (self.offset + size - 1) // size * size
        raw = self.read(self.offset, size)
        self.offset += size
        self.count += 1
        return raw

    def int(self, size: int, signed: bool) -> int:
        return int.from_bytes(self.take(size), "little", signed=signed)

    def double(self) -> float:
        return struct.unpack("<d", self.take(8))[0]


def format_call(fmt: bytes, read_args: ReadArgs, read_string: ReadString) -> tuple[bytes, int]:
    """(text, arguments consumed) of one ``vprintf(fmt, buf)``; the readers raise what a bad
    address raises (the caller turns it into the launch's fault)."""
    args, out, pos = _Args(read_args), bytearray(), 0
    for m in _SPEC.finditer(fmt):
        out += fmt[pos:m.start()]
        pos = m.end()
        if args.count >= MAX_ARGS and m.group(5) not in (b"%", None):
            out += m.group(0)
            continue
        out += _convert(m, args, read_string)
    out += fmt[pos:]
    return bytes(out), args.count


def _convert(m: re.Match, args: _Args, read_string: ReadString) -> bytes:
    flags, width, prec, length, conv = m.groups()
    if conv is None:
        return m.group(0)
    if conv == b"%":
        return b"%"
    if width == b"*":
        w = args.int(4, True)
        flags, width = (flags + b"-", str(-w).encode()) if w < 0 else (flags, str(w).encode())
    if prec == b"*":
        p = args.int(4, True)
        prec = str(p).encode() if p >= 0 else None
    size = (width or b"") + (b"." + prec if prec is not None else b"")
    return _value(flags.decode(), size.decode(), length or b"", conv.decode(), args,
                  read_string)


def _value(flags: str, size: str, length: bytes, conv: str, args: _Args,
           read_string: ReadString) -> bytes:
    spec, wide = "%" + flags + size, length in _WIDE
    if conv in "di":
        v = _narrow(args.int(8 if wide else 4, True), length, True)
        return (spec + "d").encode() % v
    if conv in "ouxX":
        v = _narrow(args.int(8 if wide else 4, False), length, False)
        if conv == "o" and "#" in flags:        # C's alternate octal is a leading 0, not 0o
            prec = "." + size.split(".", 1)[1] if "." in size else ""
            digits = ("%" + prec + "o") % v
            digits = digits if digits.startswith("0") else "0" + digits
            return _pad(digits, flags, size)
        return (spec + conv).encode() % v
    if conv == "c":
        return (spec + "c").encode() % (args.int(4, True) & 0xFF)
    if conv == "s":
        addr = args.int(8, False)
        return (spec + "s").encode() % (read_string(addr) if addr else b"(null)")
    if conv == "p":
        addr = args.int(8, False)
        return _pad(f"0x{addr:x}" if addr else "(nil)", flags.replace("0", ""), size)
    if conv == "n":
        args.int(8, False)
        return b""
    x = args.double()
    if conv in "aA":
        return _pad(_hexfloat(x, conv == "A"), flags, size)
    text = (spec + conv).encode() % x
    if x != x and struct.pack("<d", x)[7] & 0x80:          # glibc shows a negative NaN's sign
        text = text.replace(b"nan", b"-nan", 1).replace(b"NAN", b"-NAN", 1)
    return text


def _pad(text: str, flags: str, size: str) -> bytes:
    """``text`` padded to the width of ``size`` (left-justified with ``-``)."""
    width = int(size.split(".")[0] or 0)
    return (text.ljust(width) if "-" in flags else text.rjust(width)).encode("latin-1")


def _narrow(v: int, length: bytes, signed: bool) -> int:
    bits = {b"h": 16, b"hh": 8}.get(length)
    if bits is None:
        return v
    v &= (1 << bits) - 1
    return v - (1 << bits) if signed and v >> (bits - 1) else v


def _hexfloat(v: float, upper: bool) -> str:
    """glibc's %a: the shortest hex mantissa (``0x1.8p+1``, ``0x1p+0``)."""
    if v != v or v in (float("inf"), float("-inf")):
        text = repr(v)
    else:
        mant, exp = v.hex().split("p")
        text = f"{mant.rstrip('0').rstrip('.')}p{exp}"
    return text.upper() if upper else text
