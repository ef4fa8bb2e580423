"""The device library: functions CUDA's driver provides to PTX that declares them ``.extern``
without defining them, written here in PTX and inlined like the module's own functions, so
both engines run them.

* ``cudaGraphSetConditional(handle, value)`` (``cuda_device_runtime_api.h``): a conditional
  graph node's handle is the device address of a 32-bit word in the context
  (libgdev/csrc/cudart/graph_cond.c), so setting it is a store; a handle that is no address
  of the context faults like any bad store, naming the kernel and line.
"""

from __future__ import annotations

from .lower import lower
from .parser import parse
from .syntax import Function, ModuleAst

_HEADER = ".version 7.0\n.target sm_50\n.address_size 64\n"
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
NAMES = frozenset(_SOURCES)


def provide(ast: ModuleAst) -> None:
    """Define in ``ast`` each device-library function it declares but does not define (a
    module's own definition of such a name is left alone)."""
    for name, fn in list(ast.functions.items()):
        if name in _SOURCES and not fn.defined:
            ast.functions[name] = _parsed(name)


def _parsed(name: str) -> Function:
    """A fresh copy of library function ``name`` (callers may rename what they get)."""
    return lower(parse(_HEADER + _SOURCES[name], "<devlib>"), "<devlib>").functions[name]
