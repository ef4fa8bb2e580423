"""Device ``printf`` in compiled kernels: ``builtin.vprintf`` is one call into the host per
block step (``c->host_printf``, jit/hostcall.py) with the lanes that execute it, in lane
order, after every lane finished the instructions before it (a ``raw`` statement: its own
lane loop, which tests the call's guard).  The host formats each lane's call with the
interpreter's own code (ops_printf.print_lane), reading the format and argument addresses
from the call's ``.param`` variables and writing the count to its return variable, as the
interpreter's binder does; a fault while reading stops the launch at the call's line
(F_HOST: the host keeps the fault's words).  One call per step, not per lane: each call
takes the GIL, which engine threads printing at once would otherwise pass to and fro."""

from __future__ import annotations

from ..syntax import Group
from .hostops import lanes_call, place
from .operands import Unsupported


def printf_call(instr, ops) -> str:
    """C statement of ``builtin.vprintf`` (linker.py's builtin form) for the active lanes."""
    rets = instr.args[0].items if isinstance(instr.args[0], Group) else ()
    params = instr.args[1].items if len(instr.args) > 1 and isinstance(instr.args[1], Group) \
        else ()
    if len(params) != 2 or len(rets) > 1:
        raise Unsupported(f"vprintf with {len(params)} arguments")
    fmt, buf = (place(ops, p.name)[0] for p in params)
    ret = place(ops, rets[0].name)[0] if rets else -1
    return lanes_call(instr, ops, f"c->host_printf(c->host_arg, ln_, nl_, {fmt}, {buf}, {ret})")
