"""Split-arrive/wait barriers in shared memory (sm_80/sm_90 ``mbarrier``).

An mbarrier is an 8-byte-aligned 64-bit object in the block's shared memory.  The PTX ISA
leaves its contents opaque; both engines use this layout (``jit/mbar.h`` is the C twin of
:func:`step`)::

    bits  0-19  pending arrivals of the current phase
    bits 20-39  expected arrivals of each phase (``arrive_drop`` lowers it)
    bits 40-60  tx-count (sm_90 ``expect_tx``/``complete_tx``), 21-bit two's complement
    bit  63     the current phase's parity

A phase completes when its pending count reaches zero with a tx-count of zero: the parity
flips and the pending count is reloaded from the expected count.  More arrivals than are
pending (undefined in PTX) complete the phase, as if exactly the pending ones arrived.
``arrive`` returns a *state* token: the parity of the phase it arrived on (bit 63) and the
pending count it left (bits 0-19, what ``pending_count`` reads).  ``test_wait``/``try_wait``
with a token are true once that phase completed (the current parity differs); with
``.parity`` once the phase of that parity completed.  ``try_wait`` never suspends: the loop
nvcc writes around it spins, and the executor's min-PC policy with its periodic step of the
lanes furthest ahead lets the arriving threads run meanwhile.

A wave's lanes act in lane order, each seeing the state the previous left.  An address
outside the shared window or past the block's shared memory faults as ``out-of-bounds
shared``, a misaligned one as ``misaligned``, naming the first such lane.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gdevd.errors import MmuFault

from .decode import Ins, op
from .memory import SHARED_WINDOW
from .ops_mem import addr_reader
from .syntax import Addr, Imm, Sink

PEND, EXP, TX_SHIFT, TX_BITS, PHASE = 0xFFFFF, 0xFFFFF << 20, 40, 21, 1 << 63
TX_MASK = (1 << TX_BITS) - 1
_SPACE_MODS = {"shared", "shared::cta", "shared::cluster"}
_SEM = {"release", "acquire", "relaxed", "cta", "cluster"}

# what an instruction does: (arrive count source, drop, tx source, returns a token)
ARRIVE, DROP, EXPECT_TX, COMPLETE_TX = 1, 2, 4, 8


def step(state: int, kind: int, count: int, tx: int) -> tuple[int, int]:
    """(new state, token) after one thread's operation ``kind`` (ARRIVE/DROP/EXPECT_TX/
    COMPLETE_TX bits) with arrival ``count`` and transaction bytes ``tx``."""
    pend, exp = state & PEND, (state & EXP) >> 20
    txc, phase = (state >> TX_SHIFT) & TX_MASK, state & PHASE
    if kind & EXPECT_TX:
        txc = (txc + tx) & TX_MASK
    if kind & COMPLETE_TX:
        txc = (txc - tx) & TX_MASK
    if kind & DROP:
        exp = (exp - count) & PEND
    if kind & (ARRIVE | DROP):
        pend = max(pend - count, 0)
    token = phase | pend
    if pend == 0 and txc == 0 and kind & (ARRIVE | DROP | COMPLETE_TX):
        phase ^= PHASE
        pend = exp
    return phase | txc << TX_SHIFT | exp << 20 | pend, token


def shared_offsets(mem, space: str, va: np.ndarray, lanes: np.ndarray) -> np.ndarray:
    """Offsets into the wave's shared buffer of each lane's mbarrier (8 bytes, aligned);
    raises :class:`MmuFault` for the first lane whose address is not such an object."""
    va = np.asarray(va, dtype=np.uint64)
    if space == "generic":
        off = va - np.uint64(SHARED_WINDOW)
        outside = (va >> np.uint64(48)) != 1
    else:
        off, outside = va, np.zeros(va.shape, bool)
    misaligned = ~outside & ((off & np.uint64(7)) != 0)
    oob = outside | (~misaligned & (off + np.uint64(8) > np.uint64(mem.shared_size)))
    bad = misaligned | oob
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        where = int(va[i]) if outside[i] else int(off[i])
        raise MmuFault(where, "misaligned" if misaligned[i] else "out-of-bounds shared",
                       index=i)
    return (lanes // mem.tpb).astype(np.int64) * mem.sh_stride + off.astype(np.int64)


def apply(mem, flat: np.ndarray, kind: int, counts, txs) -> np.ndarray:
    """Run one operation per lane, in lane order, on the mbarriers at ``flat``; returns the
    tokens (uint64)."""
    words = mem.shared.view(np.uint64)
    counts = np.broadcast_to(np.asarray(counts, np.int64), flat.shape)
    txs = np.broadcast_to(np.asarray(txs, np.int64), flat.shape)
    tokens = np.empty(flat.shape, np.uint64)
    for k, at in enumerate((flat // 8).tolist()):
        new, tok = step(int(words[at]), kind, int(counts[k]), int(txs[k]))
        words[at] = new
        tokens[k] = tok
    return tokens


@dataclass(frozen=True)
class Form:
    """One decoded mbarrier instruction, for both engines: ``what`` is ``op`` (arrive,
    arrive_drop, expect_tx, complete_tx: ``kind`` of MB bits), ``init``, ``inval``, ``wait``
    (test_wait/try_wait against ``ref``, a token or with ``parity`` a phase parity) or
    ``pending``; ``space`` is ``shared`` or ``generic``; ``dest`` None for none or ``_``."""

    what: str
    space: str
    addr: Addr | None
    dest: object = None
    kind: int = 0
    count: object = None
    tx: object = None
    ref: object = None
    parity: bool = False


def parse(ins: Ins) -> Form:
    """The :class:`Form` of ``ins`` (a PtxError for a form outside the ISA's)."""
    ins.only(_SPACE_MODS | _SEM | {"init", "arrive", "arrive_drop", "expect_tx", "complete_tx",
                                   "noComplete", "test_wait", "try_wait", "parity",
                                   "pending_count", "inval"})
    if ins.type() != "b64":
        raise ins.fail("mbarrier needs .b64")
    f, space = ins.flags, _space(ins)
    if "pending_count" in f:
        ins.nargs(2)
        return Form("pending", space, None, ins.dst(0), ref=ins.src(1))
    if "test_wait" in f or "try_wait" in f:
        ins.nargs(3, 4)          # try_wait's optional suspend-time hint changes nothing
        return Form("wait", space, _addr(ins, 1), ins.dst(0), ref=ins.src(2),
                    parity="parity" in f)
    if "init" in f or "inval" in f:
        ins.nargs(1 if "inval" in f else 2)
        count = ins.src(1) if "init" in f else None
        return Form("init" if "init" in f else "inval", space, _addr(ins, 0), count=count)
    if "arrive" in f or "arrive_drop" in f:
        return _arrive(ins, space)
    if "expect_tx" in f or "complete_tx" in f:
        ins.nargs(2)
        return Form("op", space, _addr(ins, 0),
                    kind=EXPECT_TX if "expect_tx" in f else COMPLETE_TX, tx=ins.src(1))
    raise ins.fail("unsupported mbarrier operation")


def _arrive(ins: Ins, space: str) -> Form:
    ins.nargs(2, 3)
    dest = None if isinstance(ins.args[0], Sink) else ins.dst(0)
    kind = DROP if "arrive_drop" in ins.flags else ARRIVE
    count, tx = Imm(1), None
    if "expect_tx" in ins.flags:
        if len(ins.args) != 3:
            raise ins.fail("arrive.expect_tx needs a tx-count")
        kind, tx = kind | EXPECT_TX, ins.src(2)
    elif len(ins.args) == 3:
        count = ins.src(2)
    return Form("op", space, _addr(ins, 1), dest, kind, count, tx)


def _space(ins: Ins) -> str:
    named = [m for m in ins.mods if m in _SPACE_MODS]
    if len(named) > 1:
        raise ins.fail("more than one state space")
    return "shared" if named else "generic"


def _addr(ins: Ins, k: int) -> Addr:
    if not isinstance(ins.args[k], Addr):
        raise ins.fail("expected the mbarrier's address [..]")
    return ins.args[k]


@op("mbarrier")
def dec_mbarrier(ins: Ins):
    """Decoder of ``mbarrier`` (see the module docstring)."""
    form = parse(ins)
    if form.what == "pending":
        return _pending(form)
    body = {"op": _op, "init": _init, "inval": _init, "wait": _wait}[form.what]
    return _binder(form, lambda env: body(env, form))


def _binder(form: Form, body):
    """A binder resolving each lane's mbarrier and calling ``body(env)(flat, idx)``."""

    def bind(env):
        ra, mem, lanes_all = addr_reader(env, form.addr), env.mem, env.lanes_all
        run_body = body(env)

        def run(idx):
            lanes = lanes_all if idx is None else idx
            va = np.broadcast_to(np.asarray(ra(idx), np.uint64), lanes.shape)
            run_body(shared_offsets(mem, form.space, va, lanes), idx)
        return run
    return bind


def _reader(env, operand, t: str):
    return (lambda idx: 0) if operand is None else env.rd(operand, t)


def _op(env, form: Form):
    rc, rt = _reader(env, form.count, "u32"), _reader(env, form.tx, "u32")
    w, mem = env.wr(form.dest, "b64"), env.mem

    def body(flat, idx):
        w(idx, apply(mem, flat, form.kind, rc(idx), rt(idx)))
    return body


def _init(env, form: Form):
    rc, words = _reader(env, form.count, "u32"), env.mem.shared.view(np.uint64)

    def body(flat, idx):
        c = np.broadcast_to(np.asarray(rc(idx), np.uint64), flat.shape) & np.uint64(PEND)
        words[flat // 8] = c | (c << np.uint64(20))     # inval: 0
    return body


def _wait(env, form: Form):
    w, words = env.wr(form.dest, "pred"), env.mem.shared.view(np.uint64)
    rr = env.rd(form.ref, "u32" if form.parity else "b64")

    def body(flat, idx):
        now = words[flat // 8] >> np.uint64(63)
        r = np.asarray(rr(idx), np.uint64)
        w(idx, now != (r & np.uint64(1) if form.parity else r >> np.uint64(63)))
    return body


def _pending(form: Form):
    def bind(env):
        w, rs = env.wr(form.dest, "u32"), env.rd(form.ref, "b64")
        return lambda idx: w(idx, np.asarray(rs(idx), np.uint64) & np.uint64(PEND))
    return bind
