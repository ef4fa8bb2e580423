"""The loader's error: a malformed or unsupported PTX module, naming the line and construct."""

from __future__ import annotations

import errno

from gdevd.errors import GdevError


class PtxError(GdevError):
    """A PTX module was rejected at load time (errno ``EINVAL``).

    ``line`` is the 1-based source line (0 when unknown) and ``construct`` the directive,
    instruction or operand that could not be accepted.
    """

    def __init__(self, line: int, construct: str, message: str, name: str = "<ptx>") -> None:
        self.line = line
        self.construct = construct
        self.module_name = name
        super().__init__(errno.EINVAL, f"{name}:{line}: {message} ({construct!r})")
