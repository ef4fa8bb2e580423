"""A basic block's statements grouped into loops over the lanes, and the C of memory accesses.

The interpreter runs one instruction for all threads before the next, so a compiled block
may share one lane loop between instructions only where no lane can observe another lane's
order.  Lane-local (``pure``) statements always may.  Memory decides the rest:

* shared and local accesses (unguarded) are checked *in* the loop: the offset of access
  ``j`` of the loop is kept in ``xa`` slot ``j``, a faulting lane reads or writes offset 0
  instead, and after the loop the first access with a faulting lane reports its first
  faulting lane in lane order, exactly as the interpreter (the launch then ends, so the
  lanes that ran on are never seen: their registers and shared/local memory die with it).
  A local access never conflicts across lanes.  A shared load may join the loop unless the
  loop stored to shared memory before; a shared store starts a new loop unless the loop has
  no memory access yet.
* global, constant, generic and parameter accesses through a register: with ``vector``,
  every lane's address is computed (in the loop before), ``xlate`` translates them all
  (one page-table lookup per chunk of lanes, vector loads where they are consecutive) and
  the access starts a new loop.  Without (long blocks, where compile time matters more),
  every loop is one loop over a list of lanes (``LOOP1``), loads of every space are checked
  in the loop as shared ones are (:func:`_checked1`: the loop keeps its lowest faulting
  access and that access's first faulting lane), a load whose address is data-uniform at
  the block's entry is translated once before the loop (:func:`_hoist`; each lane compares
  its own address with it, so lanes that disagree stay exact), and stores other than
  shared and local resolve their pointer lane by lane in a loop of their own.  (A long
  loop block whose global loads are all data-uniform also gets a vectorized version, run
  when they are uniform now: ``jit/versions.py``.)
* atomics, guarded accesses and warp collectives end the loop; raw statements stand alone.

Every memory pointer is ``xb``-based (``xb`` is the block's shared memory; global pointers
and local offsets are kept relative to it), so the C compiler may take ``xb`` and the
register arrays as ``restrict`` and vectorize the loops.
"""

from __future__ import annotations

from .memops import ACC_R, Access, pointer

SLOTS = 8     # xa holds SLOTS * nt entries: slot 0 for xlate, 1.. for checked accesses


class _Loop:
    """The statements of the lane loop being built, and what its memory accesses were."""

    def __init__(self, macro: str) -> None:
        self.macro = macro      # LOOP (vectorizable) or LOOP1 (less code)
        self.stmts: list[str] = []
        self.checks: list[str] = []
        self.decls: list[str] = []
        self.cases: list[str] = []  # LOOP1: the fault report of each checked access
        self.slots = 0          # checked accesses so far (their xa slots are 1..)
        self.mem = False        # any memory access in the loop
        self.store = False      # a store that other lanes' shared/generic loads could see

    def c(self) -> str:
        loop = self.macro + "(" + " ".join(self.stmts) + ");"
        if self.cases:
            self.checks = [f"if (__builtin_expect(fj_ != 1 << 30, 0)) {{ const int i = fl_; "
                           f"(void)i; switch (fj_) {{ {' '.join(self.cases)} }} }}"]
        if not self.decls and not self.checks:
            return loop
        return "{ " + " ".join(self.decls) + " " + loop + " " + " ".join(self.checks) + " }"


def _checked(s: Access, slot: int, loop: _Loop) -> str:
    """A shared or local access checked in the loop (see the module docstring)."""
    j, a = slot, s.align - 1
    loop.decls.append(f"uint32_t bad{j}_ = 0;")
    if s.space == "shared":
        lim, base = "c->shared_size", "xb"
        redo = f"sptr(c, xa[{j} * n + i], {s.align}, {s.size})"
    else:
        lim, base = "c->local_size", "xb + lofs + (uint64_t)i * c->lo_stride"
        redo = f"lptr(c, xa[{j} * n + i], {s.align}, {s.size}, i)"
    loop.decls.append(f"const uint64_t lim{j}_ = {lim} >= {s.size} ? {lim} - {s.size - 1} : 0;")
    loop.checks.append(f"if (bad{j}_) LOOP(if (!{redo}) FAULT({s.line}););")
    return (f"{{ const uint64_t o_ = {s.addr}; xa[{j} * n + i] = o_; const int ok_ = "
            f"!(o_ & {a}) && o_ < lim{j}_; bad{j}_ |= !ok_; uint8_t *p_ = {base} + "
            f"(ok_ ? o_ : 0); {s.body} }}")


def _shared_index(off: str) -> str:
    """C of a shared-memory offset known to be below 2^30 (shared memory is at most 64 KiB,
    checked at load and launch) as a signed 32-bit index: the C compiler vectorizes lookups
    so indexed as 16-lane gathers (``vpgatherdd``), where an unsigned index zero-extended
    to 64 bits gives 8-lane ones or none.  (A plain cast is folded back into the
    zero-extension; the shift pair, exact below 2^30, is not.)"""
    return f"((int32_t)((uint32_t)({off}) << 1) >> 1)"


def _unchecked(s: Access) -> str:
    """A shared access that cannot fault (proven aligned and in bounds)."""
    return f"{{ uint8_t *p_ = xb + {_shared_index(s.addr)}; {s.body} }}"


def _checked1(s: Access, slot: int, loop: _Loop, hoisted: int | None) -> str:
    """An access checked in a ``LOOP1`` loop (long blocks): a shared or local access, or a
    load from any other space.  A faulting lane reads (or writes) a harmless location
    instead and the loop goes on; the loop keeps the first faulting access (lowest
    ``slot``) and of it the first lane in lane order (lanes run in increasing order), with
    its address, and reports it after the loop, as the interpreter would.  ``hoisted`` is
    the number of the block-entry translation of a data-uniform address (see
    :func:`_hoist`): a lane whose address is that one uses its pointer (NULL when that
    address faults: the lane's fault is then kept as any other)."""
    j, a = slot, s.align - 1
    if not loop.cases:
        loop.decls.append("int fj_ = 1 << 30, fl_ = 0; uint64_t fo_ = 0;")
    redo = pointer(s.space, "fo_", s.align, s.size, s.acc)
    loop.cases.append(f"case {j}: if (!{redo}) FAULT({s.line}); break;")
    keep = (f"if (__builtin_expect(!ok_, 0) && {j} < fj_) {{ fj_ = {j}; fo_ = o_; "
            f"fl_ = i; }}")
    if s.space in ("shared", "local"):
        lim = "c->shared_size" if s.space == "shared" else "c->local_size"
        base = "xb" if s.space == "shared" else "xb + lofs + (uint64_t)i * c->lo_stride"
        loop.decls.append(f"const uint64_t lim{j}_ = {lim} >= {s.size} ? "
                          f"{lim} - {s.size - 1} : 0;")
        return (f"{{ const uint64_t o_ = {s.addr}; const int ok_ = !(o_ & {a}) && "
                f"o_ < lim{j}_; {keep} uint8_t *p_ = {base} + (ok_ ? o_ : 0); {s.body} }}")
    ptr = pointer(s.space, "o_", s.align, s.size, s.acc)
    if hoisted is not None:
        u = hoisted
        ptr = f"(__builtin_expect(o_ == ua{u}_, 1) ? up{u}_ : {ptr})"
    return (f"{{ const uint64_t o_ = {s.addr}; uint8_t *p_ = {ptr}; const int ok_ = p_ != 0; "
            f"{keep} if (!ok_) p_ = jit_pad; {s.body} }}")


def _hoist(s: Access, u: int) -> str:
    """Block-entry translation number ``u`` of a data-uniform global load's address, at the
    first active lane (the block's registers it reads are not written before the load)."""
    return (f"uint64_t ua{u}_; uint8_t *up{u}_; {{ const int i = full ? 0 : act[0]; "
            f"ua{u}_ = {s.addr}; up{u}_ = gptr(c, ua{u}_, {s.align}, {s.acc}); }}")


def inline_access(s: Access) -> str:
    """A memory access resolving its lane's pointer itself (guarded or in a long block)."""
    return f"{{ uint8_t *p_ = {s.pointer()}; if (!p_) FAULT({s.line}); {s.body} }}"


def _translated(s: Access) -> str:
    """C of an access whose addresses are in ``xa``: translate them all, then load or store,
    with vector loads and stores where ``xlate`` found consecutive elements (global memory
    only, where streams of consecutive elements are common and gathers costly)."""
    xl = (f"const int x_ = xlate(c, full, na, {s.space_code}, {s.align}, {s.size}, {s.acc}); "
          f"if (x_ < 0) FAULT({s.line});")
    gather = f"LOOP({{ uint8_t *p_ = xb + xa[i]; {s.body} }});"
    if s.space_code not in ("SP_GLOBAL", "SP_GENERIC"):
        return f"{{ {xl} {gather} }}"
    return f"{{ {xl} if (x_) CLOOP({s.size}, {s.body}) else {gather} }}"


def loops(stmts: list[tuple], vector: bool) -> list[str]:
    """C statements of one basic block's instructions, ``(C or Access, kind)`` each."""
    if not vector:
        return _loops1(stmts)
    out: list[str] = []
    loop = _Loop("LOOP")

    def flush() -> _Loop:
        if loop.stmts:
            out.append(loop.c())
        return _Loop("LOOP")

    for s, kind in stmts:
        if not s:
            continue
        if isinstance(s, Access) and s.space in ("shared", "local"):
            store = s.acc.endswith("WRITE")
            if s.space == "shared" and (loop.store or (store and loop.mem)):
                loop = flush()
            if s.safe:
                loop.stmts.append(_unchecked(s))
            else:
                if loop.slots + 1 >= SLOTS:
                    loop = flush()
                loop.slots += 1
                loop.stmts.append(_checked(s, loop.slots, loop))
            if s.space == "shared":
                loop.mem, loop.store = True, loop.store or store
            continue
        if kind == "mem":                   # the address joins the loop before
            loop.stmts.append(f"xa[i] = {s.addr};")
            loop = flush()
            out.append(_translated(s))
            continue
        if kind != "pure":
            loop = flush()
        if kind == "raw":
            out.append(s)
            continue
        loop.stmts.append(s)
        if kind == "ordered":
            loop.mem = loop.store = True
    flush()
    return out


def _loops1(stmts: list[tuple]) -> list[str]:
    """``loops`` for long blocks: ``LOOP1`` loops, loads of every space checked in the loop
    (see :func:`_checked1`), data-uniform global addresses translated once at block entry;
    stores other than shared and local end the loop as before."""
    pre: list[str] = []
    out: list[str] = []
    loop = _Loop("LOOP1")

    def flush() -> _Loop:
        if loop.stmts:
            out.append(loop.c())
        return _Loop("LOOP1")

    for s, kind in stmts:
        if not s:
            continue
        if isinstance(s, Access) and (s.space in ("shared", "local") or s.acc == ACC_R):
            store = s.acc != ACC_R
            if s.space != "local" and (loop.store or (store and loop.mem)):
                loop = flush()
            hoisted = None
            if s.hoist and s.space in ("global", "const"):
                hoisted = len(pre)
                pre.append(_hoist(s, hoisted))
            loop.slots += 1
            loop.stmts.append(_unchecked(s) if s.safe else
                              _checked1(s, loop.slots, loop, hoisted))
            if s.space != "local":
                loop.mem, loop.store = True, loop.store or store
            continue
        if kind == "mem":
            s, kind = inline_access(s), "ordered"
        if kind != "pure":
            loop = flush()
        if kind == "raw":
            out.append(s)
            continue
        loop.stmts.append(s)
        if kind == "ordered":
            loop.mem = loop.store = True
    flush()
    return pre + out
