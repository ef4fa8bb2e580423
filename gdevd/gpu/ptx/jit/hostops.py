"""C of the statements that call into the host (printfops.py, devrtops.py): the lanes that
execute the call, in lane order, gathered into a list and handed over in one call per block
step (after every lane finished the instructions before: a ``raw`` statement, which tests
the call's guard itself); a nonzero return stops the launch at the call's line (F_HOST:
the host keeps the fault's words, jit/hostcall.py)."""

from __future__ import annotations

from .operands import Unsupported


def place(ops, name: str) -> tuple[int, int]:
    """(offset, size) of ``.param`` variable ``name`` in a lane's .param memory."""
    kind, off = ops.symbols.get(name, (None, 0))
    if kind != "pvar":
        raise Unsupported(f"host call argument {name} is not a .param variable")
    return off, ops.pvar_sizes.get(name, 0)


def lanes_call(instr, ops, call: str) -> str:
    """The statement that calls ``call`` (a C call expression reading ``ln_``, the lanes,
    and ``nl_``, their count) for the active lanes whose guard holds, if any."""
    guard = "1" if instr.guard is None else ops.guard(instr.guard)
    return (f"{{ int32_t ln_[1024]; int32_t nl_ = 0; LOOP(if ({guard}) ln_[nl_++] = i;); "
            f"if (nl_ && {call}) {{ c->fault_kind = F_HOST; FAULT({instr.line}); }} }}")
