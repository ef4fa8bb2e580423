"""The ABI's building blocks: the fixed header, field types, typed layouts and commands.

A message's argument struct is a :class:`typing.NamedTuple` whose fields carry their wire
format in their annotation (``size: U64``); :class:`Layout` reads those formats once, at
import, and packs and unpacks the class with one precompiled :class:`struct.Struct`.  Every
struct is little-endian, its size a multiple of 8, with explicit zero padding at its end
(``pad`` bytes, named ``_pad0`` in the generated C header) that a decoder refuses unless zero
(Documentation/process/botching-up-ioctls.rst).  A :class:`Command` ties a number and a name
to its request and reply layouts, so that ``Command[Size, Addr]`` types both ends of a call.

:mod:`libgdev.messages` declares the structs and the command table; :mod:`libgdev.abi`
encodes and decodes whole messages.
"""

from __future__ import annotations

import errno as _errno
import struct
import typing
from dataclasses import dataclass
from typing import Annotated, Generic, NamedTuple, TypeVar

from libgdev.errors import GdevError

MAGIC = 0x56454447  # b"GDEV" read as a little-endian u32
ABI_VERSION = 3  # 2: error replies carry the daemon's message; 3: TexDesc has mip levels
HEADER = struct.Struct("<IHHIIQQ")
HEADER_SIZE = HEADER.size  # 32
STATUS = struct.Struct("<iI")  # a reply's status and message length
MAX_PAYLOAD = (1 << 20) + 4096  # largest payload either side accepts
FLAG_REPLY = 0x1
KNOWN_FLAGS = FLAG_REPLY
TOKEN_SIZE = 32

# Field types: the Python type a handler sees, annotated with its struct format.
U32 = Annotated[int, "I"]
U64 = Annotated[int, "Q"]
I32 = Annotated[int, "i"]
Token = Annotated[bytes, f"{TOKEN_SIZE}s"]

Tail = bytes | memoryview  # a message's variable part, as handlers and callers see it


class ProtocolError(GdevError):
    """A message that cannot be accepted.  ``errno`` is the status the daemon replies with
    (``detail`` its message); ``fatal`` means the byte stream is lost and the session must
    close."""

    def __init__(self, err: int, detail: str, fatal: bool = False) -> None:
        super().__init__(err, detail)
        self.fatal = fatal

    def __str__(self) -> str:
        return f"[{_errno.errorcode.get(self.errno, self.errno)}] {self.detail}"


class Header(NamedTuple):
    """The fixed message header (see :mod:`libgdev.abi`)."""

    magic: int
    version: int
    flags: int
    command: int
    payload_len: int
    request_id: int
    reserved: int


class Frame(NamedTuple):
    """One whole message: its header and its payload (bytes, or a read-only view of the
    receive buffer's memory that no later data overwrites)."""

    header: Header
    payload: bytes | memoryview


class Empty(NamedTuple):
    """The argument struct of a command that has none."""


T = TypeVar("T", bound=tuple[object, ...])  # a struct class (a NamedTuple)
Req = TypeVar("Req", bound=tuple[object, ...])
Rep = TypeVar("Rep", bound=tuple[object, ...])


def _formats(cls: type[tuple[object, ...]]) -> list[tuple[str, str]]:
    """(name, struct format) of every field of NamedTuple ``cls``, from its annotations."""
    hints = typing.get_type_hints(cls, include_extras=True)
    fields: tuple[str, ...] = getattr(cls, "_fields")  # noqa: B009 (T is any NamedTuple)
    return [(name, hints[name].__metadata__[0]) for name in fields]


class Layout(Generic[T]):
    """The wire form of struct class ``cls`` (a NamedTuple of annotated fields), ``pad``
    zero bytes after its fields, and an optional variable tail.  ``fields`` lists every
    (name, format) pair, padding included, as the C header names them."""

    def __init__(self, name: str, cls: type[T], *, pad: int = 0, tail: bool = False) -> None:
        self.name = name
        self.cls = cls
        self.tail = tail
        pads = [(f"_pad{i}", "I") for i in range(pad // 4)]
        self.fields: tuple[tuple[str, str], ...] = (*_formats(cls), *pads)
        self.struct = struct.Struct("<" + "".join(fmt for _, fmt in self.fields))
        if self.struct.size % 8 or pad % 4:
            raise ValueError(f"{name}: size {self.struct.size} is not a multiple of 8")
        # invariant: padding is the struct's last fields, so a value packs as (*value, *pad)
        self.pad_values = (0,) * len(pads)
        self.n_public = len(self.fields) - len(pads)
        self.make: typing.Callable[[typing.Iterable[object]], T] = getattr(cls, "_make")  # noqa: B009
        fmt = self.struct.format.lstrip("<")
        self.request_message = struct.Struct(HEADER.format + fmt)  # header + fields
        self.reply_message = struct.Struct(HEADER.format + "iI" + fmt)  # + status, msg_len

    def pack(self, value: T, tail: Tail = b"") -> bytes:
        """Encode ``value`` and ``tail``; ValueError on values out of their fields' range."""
        if len(tail) and not self.tail:
            raise ValueError(f"{self.name} takes no tail")
        try:
            body = self.struct.pack(*value, *self.pad_values)
        except struct.error as exc:
            raise ValueError(f"{self.name}: {exc}") from None
        return body + bytes(tail) if len(tail) else body

    def pack_message(self, whole: struct.Struct, head: tuple[int, ...], value: T) -> bytes:
        """``head`` (the header's values, and a reply's status and pad) and ``value`` in one
        ``pack`` call of ``whole`` (:attr:`request_message` or :attr:`reply_message`)."""
        try:
            return whole.pack(*head, *value, *self.pad_values)
        except struct.error as exc:
            raise ValueError(f"{self.name}: {exc}") from None

    def from_raw(self, raw: tuple[object, ...]) -> T | None:
        """The value of unpacked fields ``raw`` (padding included), None if a pad is not 0."""
        if not self.pad_values:
            return self.make(raw)
        n = self.n_public
        if any(raw[n:]):
            return None
        return self.make(raw[:n])

    def unpack(self, payload: bytes | memoryview) -> tuple[T, memoryview]:
        """Decode a payload into (value, tail) or raise ProtocolError(EINVAL).  The tail is a
        view of ``payload`` (inline copy data is not copied here)."""
        size = self.struct.size
        if len(payload) < size or (len(payload) > size and not self.tail):
            raise ProtocolError(_errno.EINVAL,
                                f"{self.name}: payload of {len(payload)} bytes, want {size}")
        value = self.from_raw(self.struct.unpack_from(payload))
        if value is None:
            raise ProtocolError(_errno.EINVAL, f"{self.name}: nonzero padding")
        return value, memoryview(payload)[size:]


@dataclass(frozen=True, eq=False)
class Command(Generic[Req, Rep]):
    """One ioctl command: its number and name, request and reply layouts, whether the reply
    passes a file descriptor (SCM_RIGHTS) and whether it needs a bound session."""

    number: int
    name: str
    request: Layout[Req]
    reply: Layout[Rep]
    passes_fd: bool = False
    needs_session: bool = True

    def __repr__(self) -> str:
        return f"Command(0x{self.number:x}, {self.name})"
