"""The device runtime's calls in compiled kernels (``builtin.cudaLaunchDeviceV2`` and the
rest, devrt.py): like device printf (printfops.py), one call into the host per block step
with the lanes that execute the call, in lane order (a ``raw`` statement testing the
call's guard), where the interpreter's own handlers run (ops_devrt.call) on a view of the
compiled block (jit/hostcall.py).  The call passes the runtime function's name, each
argument variable's ``.param`` offset and size, and the return variable's (or -1); the
host writes each lane's value there.  A fault while a handler writes through a pointer
stops the launch at the call's line (F_HOST)."""

from __future__ import annotations

from ..ops_devrt import supported
from ..syntax import Group
from .hostops import lanes_call, place
from .operands import Unsupported


def devrt_call(instr, ops) -> str:
    """C statement of a ``builtin.<device runtime call>`` for the active lanes."""
    name = instr.opcode.split(".", 1)[1]
    rets = instr.args[0].items if isinstance(instr.args[0], Group) else ()
    params = instr.args[1].items if len(instr.args) > 1 and isinstance(instr.args[1], Group) \
        else ()
    if not supported(name, len(params), len(rets)) or not name.isidentifier():
        raise Unsupported(f"device runtime call {name}")
    places = [x for p in params for x in place(ops, p.name)]
    ret, size = place(ops, rets[0].name) if rets else (-1, 0)
    table = ", ".join(map(str, places or [0]))
    call = (f"c->host_devrt(c->host_arg, \"{name}\", ln_, nl_, a_, {len(params)}, {ret}, "
            f"{size})")
    return f"{{ static const int64_t a_[] = {{ {table} }}; {lanes_call(instr, ops, call)} }}"
