"""A loaded module's function table: what MODULE_LOAD replies with (protocol surface).

The daemon parses, links and lays out a module; the client learns from this table all it
needs to launch and to answer cuModuleGetFunction / cuModuleGetGlobal / cuFuncGetAttribute
without parsing PTX itself.  The wire form is the MODULE_LOAD reply's tail (``docs/abi.md``),
fixed-width little-endian records, each padded to a multiple of 8 so a C client can walk it::

    n_functions x ( FUNCTION: name_len u32, n_params u32, param_size u32, max_threads u32,
                              static_shared u32, local_size u32, num_regs u32,
                              const_size u32, max_dynamic_shared u32, flags u32  (40 bytes)
                    name (name_len bytes, zero-padded to 8)
                    n_params x PARAM: offset u32, size u32, align u32, _pad u32,
                                      type 8s (PTX type, e.g. "f32", "u64", "b8")  (24) )
    n_globals   x ( GLOBAL: addr u64, size u64, name_len u32, space u32  (24 bytes)
                    name (name_len bytes, zero-padded to 8) )

Names are ASCII (PTX identifiers); ``space`` is 0 for ``.global``, 1 for ``.const``.
``flags``: FUNC_PRINTS (the kernel calls ``printf``: a client fetches the context's printf
output at its next synchronization, PRINTF_DRAIN); other bits are zero.  Like
the rest of the ABI this module does no I/O; :func:`decode` raises ``ProtocolError(EPROTO)``
on anything malformed.
"""

from __future__ import annotations

import errno as _errno
import struct
from dataclasses import dataclass
from typing import Any

from libgdev.wire import ProtocolError

FUNCTION = struct.Struct("<10I")
PARAM = struct.Struct("<4I8s")
GLOBAL = struct.Struct("<QQII")
SPACES = ("global", "const")
NAME_MAX = 1024  # longest kernel or variable name carried
FUNC_PRINTS = 0x1  # FUNCTION.flags: the kernel calls printf
FUNC_FLAGS = FUNC_PRINTS


@dataclass(frozen=True)
class Param:
    """One kernel parameter: where it lies in the parameter buffer and its PTX type."""

    offset: int
    size: int
    align: int
    type: str = ""  # "f32", "u64", ... ("" when the daemon does not know it)


@dataclass(frozen=True)
class Function:
    """One kernel (an ``.entry``) of a loaded module and its attributes."""

    name: str
    params: tuple[Param, ...]
    param_size: int
    max_threads: int
    static_shared: int
    local_size: int
    num_regs: int
    const_size: int
    max_dynamic_shared: int
    prints: bool = False  # calls printf (FUNC_PRINTS)


@dataclass(frozen=True)
class Global:
    """A module variable in device memory."""

    name: str
    addr: int
    size: int
    space: str  # "global" or "const"


@dataclass(frozen=True)
class ModuleTable:
    """The daemon's answer to MODULE_LOAD: the module's id, data segment and tables."""

    module_id: int
    data_addr: int
    data_size: int
    ptx_version: int  # PTX ISA version * 10 (``.version 8.5`` -> 85)
    target_sm: int  # ``.target sm_75`` -> 75
    functions: tuple[Function, ...]
    globals: tuple[Global, ...]

    def function(self, name: str) -> tuple[int, Function] | None:
        """(index, Function) of the kernel ``name``, or None."""
        for i, f in enumerate(self.functions):
            if f.name == name:
                return i, f
        return None

    def global_(self, name: str) -> Global | None:
        """The variable ``name``, or None."""
        return next((g for g in self.globals if g.name == name), None)


def _name(raw: str) -> bytes:
    data = raw.encode("ascii")
    if not 0 < len(data) <= NAME_MAX:
        raise ValueError(f"name of {len(data)} bytes")
    return data + bytes(-len(data) % 8)


def encode(functions: tuple[Function, ...], globals_: tuple[Global, ...]) -> bytes:
    """The reply tail for ``functions`` and ``globals_`` (ValueError on a bad value)."""
    out = bytearray()
    for f in functions:
        name = _name(f.name)
        out += FUNCTION.pack(len(f.name), len(f.params), f.param_size, f.max_threads,
                             f.static_shared, f.local_size, f.num_regs, f.const_size,
                             f.max_dynamic_shared, FUNC_PRINTS if f.prints else 0) + name
        for p in f.params:
            out += PARAM.pack(p.offset, p.size, p.align, 0, p.type.encode("ascii"))
    for g in globals_:
        out += GLOBAL.pack(g.addr, g.size, len(g.name), SPACES.index(g.space)) + _name(g.name)
    return bytes(out)


class _Reader:
    """Walks a table tail; every overrun or bad value is EPROTO."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, st: struct.Struct) -> tuple[Any, ...]:
        if self.pos + st.size > len(self.data):
            raise ProtocolError(_errno.EPROTO, "module table: truncated record")
        values = st.unpack_from(self.data, self.pos)
        self.pos += st.size
        return values

    def name(self, n: int) -> str:
        end = self.pos + n + (-n % 8)
        if not 0 < n <= NAME_MAX or end > len(self.data) or any(self.data[self.pos + n:end]):
            raise ProtocolError(_errno.EPROTO, "module table: bad name")
        try:
            return self.data[self.pos:self.pos + n].decode("ascii")
        except UnicodeDecodeError:
            raise ProtocolError(_errno.EPROTO, "module table: name is not ASCII") from None
        finally:
            self.pos = end


def _function(r: _Reader) -> Function:
    (name_len, n_params, param_size, max_threads, shared, local, regs, const, dyn,
     flags) = r.take(FUNCTION)
    if flags & ~FUNC_FLAGS:
        raise ProtocolError(_errno.EPROTO, f"module table: unknown function flags {flags:#x}")
    name = r.name(name_len)
    params = []
    for _ in range(n_params):
        offset, size, align, ppad, ptype = r.take(PARAM)
        if ppad:
            raise ProtocolError(_errno.EPROTO, "module table: nonzero padding")
        params.append(Param(offset, size, align, ptype.rstrip(b"\0").decode("ascii", "replace")))
    return Function(name, tuple(params), param_size, max_threads, shared, local, regs, const,
                    dyn, bool(flags & FUNC_PRINTS))


def decode(data: bytes | memoryview, n_functions: int,
           n_globals: int) -> tuple[tuple[Function, ...], tuple[Global, ...]]:
    """(functions, globals) from a MODULE_LOAD reply tail; ProtocolError(EPROTO) if the
    tail is malformed or longer than the records it announces."""
    r = _Reader(bytes(data))
    functions = tuple(_function(r) for _ in range(n_functions))
    globals_ = []
    for _ in range(n_globals):
        addr, size, name_len, space = r.take(GLOBAL)
        if space >= len(SPACES):
            raise ProtocolError(_errno.EPROTO, f"module table: space {space}")
        globals_.append(Global(r.name(name_len), addr, size, SPACES[space]))
    if r.pos != len(r.data):
        raise ProtocolError(_errno.EPROTO, "module table: trailing bytes")
    return functions, tuple(globals_)
