"""Device ``assert``: the line CUDA prints for a failed assertion, and its error.

nvcc compiles ``assert(e)`` to a call of ``__assertfail(message, file, line, function,
charSize)`` (linker.py keeps it as ``builtin.__assertfail``, program.py makes it a TRAP
terminator naming its argument variables).  On a GPU the kernel stops, the driver prints
``file:line: function: block: [x,y,z], thread: [x,y,z] Assertion `message` failed.`` for
each failing thread, and every later call of the context fails with ``cudaErrorAssert``.
Both engines raise :func:`failure` for the first failing thread in lane order (one line,
where a GPU prints one per failing thread); the clients map its errno to
``CUDA_ERROR_ASSERT`` and print the line to stderr.
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Sequence

from gdevd.errors import KernelFault

ASSERT_ERRNO = errno.ENOTRECOVERABLE   # -> CUDA_ERROR_ASSERT in every client
MAX_STRING = 4096
_PAGE = 4096


def c_string(read: Callable[[int, int], bytes], addr: int, limit: int = MAX_STRING) -> bytes:
    """The NUL-terminated string at generic address ``addr`` (at most ``limit`` bytes),
    read with ``read(addr, n)``.  A global string is read up to the end of its page (which
    is mapped if the string's next byte is), any other space a byte at a time; whatever
    ``read`` raises for an unmapped byte propagates."""
    out = bytearray()
    while len(out) < limit:
        n = min(64, _PAGE - addr % _PAGE) if addr < 1 << 48 else 1
        chunk = read(addr, n)
        end = chunk.find(0)
        if end >= 0:
            return bytes(out + chunk[:end])
        out += chunk
        addr += n
    return bytes(out[:limit])


def failure(kernel: str, line: int, values: Sequence[int], read: Callable[[int, int], bytes],
            block: Sequence[int], thread: Sequence[int]) -> KernelFault:
    """The fault of a failed ``assert`` in ``kernel`` (PTX ``line``): ``values`` are the
    thread's ``__assertfail`` arguments (message, file, line, function), strings
    read with ``read``; one that cannot be read shows as ``?``."""
    def text(addr: int) -> str:
        try:
            return c_string(read, addr, 512).decode("utf-8", "replace") if addr else "?"
        except Exception:   # an unreadable string must not hide the assertion itself
            return "?"
    message, file, src_line, function = (text(values[0]), text(values[1]),
                                         values[2] & 0xFFFFFFFF, text(values[3]))
    where = f"block: [{','.join(map(str, block))}], thread: [{','.join(map(str, thread))}]"
    return KernelFault(ASSERT_ERRNO, f"{file}:{src_line}: {function}: {where} Assertion "
                                     f"`{message}` failed. (kernel {kernel}, PTX line {line})")
