"""What a /proc/gdev file is (:class:`Entry`, :class:`TextEntry`) and the parsers and
formats the declarations in :mod:`procfs.table` share.

An entry holds no state: ``get`` reads a statistics record of the runtime
(:mod:`gdevd.runtime.stats`), ``set`` calls one of its validated setters
(:mod:`gdevd.runtime.tunables`); ``bounds`` come from :data:`gdevd.runtime.defaults.BOUNDS`
and are checked here too, so a refusal names the range before the runtime is reached.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gdevd.errors import GdevError
from gdevd.runtime import defaults as D

RO, RW = 0o444, 0o644
_WORD_MAX = 32


def bounds(name: str) -> tuple[int, int]:
    """The bounds of tunable ``name`` from the one defaults module."""
    return D.BOUNDS[name]


@dataclass(frozen=True)
class Entry:
    """One /proc/gdev file."""

    name: str
    scope: str  # "global", "vgpu", "module" or "control"
    mode: int
    help: str
    get: Callable[[Any], Any]
    set: Callable[[Any, Any], None] | None = None
    bounds: tuple[int, int] | None = None
    parser: Callable[[bytes], Any] | None = None     # text entries: bytes -> value or EINVAL
    formatter: Callable[[Any], bytes] | None = None  # text entries: value -> bytes

    @property
    def writable(self) -> bool:
        """Whether the entry accepts writes (root only, by its mode)."""
        return self.set is not None

    def parse(self, data: bytes) -> Any:
        """Parse a written value: an unsigned decimal, surrounding whitespace allowed
        (or the entry's own ``parser``)."""
        if self.parser is not None:
            return self.parser(data)
        return parse_unsigned(self.name, data)

    def validate(self, value: int) -> None:
        """Refuse a value outside ``bounds`` with EINVAL."""
        if self.bounds and not self.bounds[0] <= value <= self.bounds[1]:
            lo, hi = self.bounds
            raise GdevError(errno.EINVAL, f"{self.name}: {value} outside [{lo}, {hi}]")

    def format(self, value: Any) -> bytes:
        """The text a read returns: the entry's ``formatter``, a table as it is, or the value
        and a newline."""
        if self.formatter is not None:
            return self.formatter(value)
        if isinstance(value, str):
            return value.encode()
        return b"%d\n" % value




@dataclass(frozen=True)
class TextEntry(Entry):
    """An entry whose value is a line (or lines) of text; ``choices`` bounds writes."""

    choices: tuple[str, ...] = ()

    def parse(self, data: bytes) -> Any:
        """The written text, stripped; EINVAL if it is not UTF-8."""
        try:
            return data.decode().strip()
        except UnicodeDecodeError:
            raise GdevError(errno.EINVAL, f"{self.name}: not UTF-8") from None

    def validate(self, value: Any) -> None:
        """EINVAL unless ``value`` is one of ``choices`` (when there are choices)."""
        if self.choices and value not in self.choices:
            raise GdevError(errno.EINVAL, f"{self.name}: {value!r} not in {self.choices}")

    def format(self, value: Any) -> bytes:
        """The text, newline-terminated."""
        text = str(value)
        return (text if text.endswith("\n") else text + "\n").encode()




def parse_unsigned(name: str, data: bytes) -> int:
    """An unsigned decimal, surrounding whitespace allowed; EINVAL naming ``name`` else."""
    text = data.strip()
    if not text or len(text) > 63 or not text.isdigit():
        raise GdevError(errno.EINVAL, f"{name}: not an unsigned integer: {data[:64]!r}")
    return int(text)


def parse_multiple(name: str, unit: int) -> Callable[[bytes], int]:
    """A parser of unsigned decimals that are multiples of ``unit`` (a chunk in pages)."""
    def parse(data: bytes) -> int:
        value = parse_unsigned(name, data)
        if value % unit:
            raise GdevError(errno.EINVAL, f"{name}: {value} is not a multiple of {unit}")
        return value
    return parse


def parse_word(data: bytes) -> str:
    """One lower-case ASCII word, surrounding whitespace allowed; EINVAL otherwise."""
    text = data.strip()
    if not text or len(text) > _WORD_MAX or not text.isalpha() or not text.isascii():
        raise GdevError(errno.EINVAL, f"not a word: {data[:_WORD_MAX]!r}")
    return text.decode().lower()


def parse_choice(what: str, choices: tuple[str, ...]) -> Callable[[bytes], str]:
    """A parser of one word among ``choices``; EINVAL naming them otherwise."""
    def parse(data: bytes) -> str:
        word = parse_word(data)
        if word not in choices:
            raise GdevError(errno.EINVAL, f"unknown {what} {word!r}; one of {', '.join(choices)}")
        return word
    return parse


def format_word(value: str) -> bytes:
    """The word and a newline."""
    return value.encode() + b"\n"


def format_choices(choices: tuple[str, ...]) -> Callable[[str], bytes]:
    """Every choice on one line, the current one in brackets (``[band] credit fifo null``)."""
    def fmt(value: str) -> bytes:
        return " ".join(f"[{n}]" if n == value else n for n in choices).encode() + b"\n"
    return fmt


def format_text(value: str) -> bytes:
    """Multi-line text as is."""
    return value.encode()
