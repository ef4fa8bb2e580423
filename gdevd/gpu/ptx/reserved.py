"""The reserved shared memory region (PTX ISA 7.6, sm_80 and later):
``%reserved_smem_offset_begin``, ``_end`` and ``_cap`` (its start, end and size in the CTA's
shared window) and ``%reserved_smem_offset_0``/``_1`` (offsets of two parts of it).  CUDA's
cooperative groups keep the scratch of tiles wider than a warp (``thread_block_tile<64>``
and up, their ``reduce`` and ``sync``) at ``%reserved_smem_offset_1`` and count on 288 bytes
there.

A kernel whose code reads one of these registers gets the region as one more static
``.shared`` variable (REGION bytes, 16-aligned, after the kernel's own, before dynamic shared
memory), and each register becomes that variable's address plus its offset (the capacity an
immediate), so both engines see a plain shared address.  Offset 0 is the region's start,
offset 1 its middle.
"""

from __future__ import annotations

from dataclasses import replace

from .syntax import Addr, Group, Imm, Instr, Pair, Sym, VarDecl, Vec

REGION = 1024               # bytes: what sm_80 and later reserve per CTA
NAME = "%reserved_smem"     # a name no PTX variable can have
_ADDRESS = {"%reserved_smem_offset_begin": 0, "%reserved_smem_offset_0": 0,
            "%reserved_smem_offset_1": REGION // 2, "%reserved_smem_offset_end": REGION}
_CAP = "%reserved_smem_offset_cap"


def _swap(a, found: list):
    """``a`` with the registers replaced (``found`` gets an entry per replacement)."""
    if isinstance(a, Sym) and (a.name in _ADDRESS or a.name == _CAP):
        found.append(a.name)
        return Imm(REGION + a.offset) if a.name == _CAP else \
            Sym(NAME, _ADDRESS[a.name] + a.offset)
    if isinstance(a, Addr) and isinstance(a.base, Sym):
        return replace(a, base=_swap(a.base, found)) if a.base.name in _ADDRESS else a
    if isinstance(a, Vec | Group):
        return replace(a, items=tuple(_swap(x, found) for x in a.items))
    if isinstance(a, Pair):
        return Pair(_swap(a.first, found), _swap(a.second, found))
    return a


def reserve(linked) -> None:
    """Give a linked kernel the region if its code reads one of the registers (see above):
    its instructions' operands are rewritten and the variable joins ``linked.shared``."""
    found: list[str] = []
    for k, ins in enumerate(linked.code):
        if isinstance(ins, Instr):
            args = [_swap(a, found) for a in ins.args]
            if found and args != ins.args:
                linked.code[k] = replace(ins, args=args)
    if found and all(v.name != NAME for v in linked.shared):
        line = next((i.line for i in linked.code if isinstance(i, Instr)), 0)
        linked.shared.append(VarDecl("shared", NAME, "b8", 16, REGION, None, line))
