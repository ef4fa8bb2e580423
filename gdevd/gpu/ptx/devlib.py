"""The device library: functions CUDA's driver provides to PTX that declares them ``.extern``
without defining them, written here in PTX and inlined like the module's own functions, so
both engines run them.

* ``cudaGraphSetConditional(handle, value)`` (``cuda_device_runtime_api.h``): a conditional
  graph node's handle is the device address of a 32-bit word in the context
  (libgdev/csrc/cudart/graph_cond.c), so setting it is a store; a handle that is no address
  of the context faults like any bad store, naming the kernel and line.
* ``cudaGetErrorString(error)`` of the device runtime (``__cudaCDP2GetErrorString``; the
  errors devrt.py returns, and "unrecognized error code" for the rest): the address of a
  NUL-terminated string in a table of fixed-width rows that comes with the function as a
  ``.global`` of the module (``__gdev_devrt_errors``).
"""

from __future__ import annotations

from .lower import lower
from .parser import parse
from .syntax import ModuleAst

_HEADER = ".version 7.0\n.target sm_50\n.address_size 64\n"

# cudaError_t -> its string, as CUDA's runtime words them (the codes devrt.py returns)
ERROR_STRINGS = {
    0: "no error", 1: "invalid argument", 9: "invalid configuration argument",
    65: "launch would exceed maximum depth of nested launches",
    69: "launch failed because launch would exceed cudaLimitDevRuntimePendingLaunchCount",
    98: "invalid device function", 101: "invalid device ordinal",
    801: "operation not supported"}
_UNKNOWN = "unrecognized error code"
_ROW = 96       # bytes per string of the table (each NUL-terminated)


def _error_string_source(name: str) -> str:
    """``name(error)``: the address of its string in ``__gdev_devrt_errors``."""
    rows = [*ERROR_STRINGS.values(), _UNKNOWN]
    data = b"".join(t.encode().ljust(_ROW, b"\0") for t in rows)
    picks = "".join(f"  setp.eq.u32 %p, %e, {code}; selp.u32 %k, {k}, %k, %p;\n"
                    for k, code in enumerate(ERROR_STRINGS))
    return f"""
.global .align 1 .b8 __gdev_devrt_errors[{len(data)}] = {{{", ".join(map(str, data))}}};
.visible .func (.param .b64 out) {name}(.param .b32 error)
{{
  .reg .b32 %e, %k;
  .reg .b64 %a, %o;
  .reg .pred %p;
  ld.param.b32 %e, [error];
  mov.u32 %k, {len(rows) - 1};
{picks}  mul.wide.u32 %o, %k, {_ROW};
  mov.u64 %a, __gdev_devrt_errors;
  cvta.global.u64 %a, %a;
  add.u64 %a, %a, %o;
  st.param.b64 [out], %a;
  ret;
}}
"""

_SOURCES = {
    "cudaGraphSetConditional": """
.visible .func cudaGraphSetConditional(.param .b64 handle, .param .b32 value)
{
    .reg .b64 %a;
    .reg .b32 %v;
    ld.param.b64 %a, [handle];
    ld.param.b32 %v, [value];
    st.global.b32 [%a], %v;
    ret;
}
""",
}
_SOURCES.update({n: _error_string_source(n)
                 for n in ("__cudaCDP2GetErrorString", "cudaGetErrorString")})
NAMES = frozenset(_SOURCES)


def provide(ast: ModuleAst) -> None:
    """Define in ``ast`` each device-library function it declares but does not define (a
    module's own definition of such a name is left alone)."""
    for name, fn in list(ast.functions.items()):
        if name in _SOURCES and not fn.defined:
            lib = _parsed(name)
            ast.functions[name] = lib.functions[name]
            for var, decl in lib.globals.items():     # the data it reads (reserved names)
                ast.globals.setdefault(var, decl)


def _parsed(name: str) -> ModuleAst:
    """A fresh copy of library function ``name`` with its data (callers may rename what
    they get)."""
    return lower(parse(_HEADER + _SOURCES[name], "<devlib>"), "<devlib>")
