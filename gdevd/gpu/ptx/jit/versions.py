"""A long block's second version: vectorized, for when its global loads are uniform.

A long block (an unrolled cipher round) is one scalar ``LOOP1`` loop (``jit/lanes.py``):
each global load in it is checked lane by lane, against a pointer translated once at the
block's entry when its address is data-uniform (``jit/uniform.py``), and the loop keeps
the first fault in the interpreter's order.  That bookkeeping is exact but keeps the C
compiler from vectorizing the loop.

When every global (and constant) load of such a block is data-uniform, the block gets a
second version, chosen at run time: if all lanes are active, every hoisted load
translated (aligned, mapped, readable) and every lane's address equal to the first lane's
(the hint holds now), each of those loads reads the same bytes in every lane, so the block
reads them once before its loop and the loop is the short blocks' vectorizable ``LOOP``
(shared and local accesses checked in it with their faults reported in lane order after
it, table lookups proven in bounds as gathers).  Otherwise the ``LOOP1`` version runs,
unchanged.

Why reading once is exact: a block is versioned only if it holds nothing but lane-local
statements, shared and local accesses and those loads, so nothing in it writes global
memory before a load reads it (shared and local memory are other buffers); the translated
loads cannot fault; and the lanes' results do not depend on the order the loop runs them
in (the same argument as for any ``LOOP``).
"""

from __future__ import annotations

from .lanes import loops
from .liveness import promote
from .localize import localize
from .memops import ACC_R, Access
from .uniform import successors

# The fast version runs when the lanes are a multiple of VF, and its loops say so (``n`` is
# ``n & ~(VF - 1)`` there): vectors of up to VF lanes (64 bytes of 8-bit values) then need
# no remainder loop, which would cost as much compile time as the vector loop itself.
VF = 64


def hoisted_loads(stmts: list[tuple]) -> list[Access] | None:
    """The data-uniform global loads of a long block, in order (the numbering of the
    ``ua``/``up`` translations ``jit/lanes.py`` makes at its entry), if the block may have
    a fast version: at least one, and nothing before the last of them that may write
    memory other than shared and local (a store, an atomic, a guarded access, a warp
    collective).  None otherwise."""
    hoisted: list[Access] = []
    writer = False
    for s, kind in stmts:
        if isinstance(s, Access) and s.hoist:
            if writer:
                return None
            hoisted.append(s)
        elif isinstance(s, Access):
            writer |= s.acc != ACC_R and s.space not in ("shared", "local")
        elif s and kind != "pure":
            writer = True
    return hoisted or None


def on_cycle(blocks, pc: int) -> bool:
    """Whether block ``pc`` can run again before its block of threads ends (it lies on a
    cycle of the control flow: a loop's body).  Only such blocks get a fast version: one
    that runs once per block start (a cipher's first or last round) would cost more
    compile time than it saves."""
    succ = successors(blocks)
    seen, todo = set(), list(succ[pc])
    while todo:
        b = todo.pop()
        if b == pc:
            return True
        if b < len(blocks) and b not in seen:
            seen.add(b)
            todo.extend(succ[b])
    return False


def _check(hoisted: list[Access]) -> str:
    """C setting ``uok_``: every lane active and every hoisted load's address translated
    and the same in every lane (a loop the C compiler vectorizes)."""
    ptrs = " && ".join(f"up{u}_" for u in range(len(hoisted)))
    same = " & ".join(f"({s.addr} == ua{u}_)" for u, s in enumerate(hoisted))
    return (f"int uok_ = full && !(n & {VF - 1}) && {ptrs}; if (uok_) "
            f"for (int i = 0; i < n; i++) uok_ &= {same};")


def versioned(stmts: list[tuple], slow: list[str], term: str, dead: set[int], names,
              ctypes: list[str], regs_io: tuple[set, set]) -> list[str] | None:
    """A long block's C statements with a fast version (see the module docstring), or None
    when it has none.  ``slow`` is the block's ``LOOP1`` version (block-entry translations
    first); the other arguments are :func:`~.localize.localize`'s and
    :func:`~.liveness.promote`'s."""
    hoisted = hoisted_loads(stmts)
    if hoisted is None:
        return None
    fast, u = [], 0
    for s, kind in stmts:
        if isinstance(s, Access) and s.hoist:
            s, kind = f"{{ const uint8_t *p_ = ub{u}_; {s.body} }}", "pure"
            u += 1
        fast.append((s, kind))
    body = localize(loops(fast, True), names, ctypes, *regs_io, macro="LOOP")
    body = promote(body, term, dead, ctypes)
    reads = " ".join(f"uint8_t ub{u}_[{s.size}]; memcpy(ub{u}_, up{u}_, {s.size});"
                     for u, s in enumerate(hoisted))
    pre, rest = slow[:len(hoisted)], slow[len(hoisted):]
    return [*pre, _check(hoisted),
            f"if (uok_) {{ const int full = 1, nv_ = n & ~{VF - 1}; (void)full; {reads} "
            f"{{ const int n = nv_; {' '.join(body)} }} }} else {{ {' '.join(rest)} }}"]
