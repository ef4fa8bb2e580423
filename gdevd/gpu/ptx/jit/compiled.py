"""A module's compiled kernels as they become ready, one shared object per kernel.

A build (:mod:`.build`) fills a :class:`Compiled` while it runs: each kernel's object is
loaded as soon as its compile ends, so a launch runs natively once *its* kernel is ready,
not the whole module.  Launches say which kernels they want (:meth:`Compiled.want`); the
build compiles those next, ahead of the largest-first order, and a launch under the ``jit``
policy waits for its own kernel only (:meth:`Compiled.wait_for`).
"""

from __future__ import annotations

import threading
from pathlib import Path

import cffi

# prelude.h's structures (jctx is allocated here, so its size must match: TLB_SIZE = 1024)
CDEF = """
struct jtlb {
    uint64_t tag[1024];
    uint8_t *base[1024];
    uint8_t acc[1024];
};
struct jctx {
    void *mmu;
    uint8_t *params, *shared, *local, *pvars, *regs, *cc;
    uint64_t *xa;
    uint8_t *xb;
    int32_t *pc, *act, *tid_x, *tid_y, *tid_z, *iota;
    uint64_t param_size, shared_size, local_size, lo_stride, pv_stride, reg_stride;
    uint64_t data_base, block, block_end, block_step, instructions, thread_instructions, fault_va;
    int64_t left;
    uint32_t ntid[3], nctaid[3], ctaid[3];
    int32_t nt, upc, nlive, nact, act_ok, started, fault_line, fault_kind;
    int32_t status, pcw;
    uint32_t divsteps, dyn_shared;
    uint64_t grid_ws;
    int64_t quantum, reserve;
    struct jtlb *tlb;
    struct jtlb tlb_own;
    const void *tex;
    uint64_t ntex;
    void *heap;
    uint32_t deferred;
    void *host_printf;
    void *host_devrt;
    void *host_arg;
    void *rt;
};
"""


class Compiled:
    """The compiled kernels of one module: C function per ready kernel, reason per kernel
    left on the interpreter, and the launches' wishes.

    Invariant: a name is in ``kernels`` only once its function is loaded (a launch may use
    it at once); ``kernels`` and ``rejected`` only grow, and never share a name.
    """

    def __init__(self) -> None:
        self.ffi = cffi.FFI()
        self.ffi.cdef(CDEF)
        self.kernels: dict[str, str] = {}
        self.rejected: dict[str, str] = {}
        self.seconds = 0.0
        self.cached = False
        self.compiled = 0       # kernels the C compiler ran for (others: shared or cached)
        self.finished = False   # the build ended (done, failed or cancelled)
        self.pool: dict = {}    # idle launch state per kernel and shape (launch.py)
        self.runtime = 0        # the address of the kernels' scheduler table (runtime.py)
        self._fns: dict[str, object] = {}
        self._libs: list[object] = []      # keeps every loaded object mapped
        self._wanted: list[str] = []
        self._cond = threading.Condition()

    def function(self, fname: str):
        """The loaded entry point (``NAME_run``) of C function ``fname``."""
        return self._fns[fname]

    def has(self, fname: str) -> bool:
        """Whether C function ``fname`` is loaded."""
        return fname in self._fns

    def load(self, so: Path, fname: str, names: list[str]) -> None:
        """Load ``fname`` from shared object ``so`` (once) and make it the code of kernels
        ``names``; wakes launches waiting for them."""
        with self._cond:
            if fname not in self._fns:
                self.ffi.cdef(f"void {fname}_run(struct jctx **, int, int64_t);")
                lib = self.ffi.dlopen(str(so))
                self._libs.append(lib)
                self._fns[fname] = getattr(lib, f"{fname}_run")
        self.share(fname, names)

    def share(self, fname: str, names: list[str]) -> None:
        """Make loaded function ``fname`` the code of kernels ``names`` too (twins)."""
        with self._cond:
            assert fname in self._fns, fname
            for name in names:
                self.kernels[name] = fname
            self._cond.notify_all()

    def reject(self, names: list[str], why: str) -> None:
        """Leave kernels ``names`` on the interpreter for reason ``why``."""
        with self._cond:
            for name in names:
                self.rejected[name] = why
            self._cond.notify_all()

    def want(self, kernel: str) -> None:
        """A launch wants ``kernel``: the build compiles it before kernels nobody asked for."""
        if kernel in self.kernels or kernel in self.rejected:
            return
        with self._cond:
            if kernel not in self._wanted:
                self._wanted.append(kernel)

    def take(self, queue: list[str]) -> tuple[str, bool]:
        """Remove and return the next kernel of ``queue`` to compile: the first wanted one,
        else the head; and whether a launch wants it."""
        with self._cond:
            for name in self._wanted:
                if name in queue:
                    queue.remove(name)
                    return name, True
        return queue.pop(0), False

    def wants_any(self, queue: list[str]) -> bool:
        """Whether a launch wants a kernel still in ``queue``."""
        with self._cond:
            return any(name in queue for name in self._wanted)

    def settled(self, kernel: str) -> bool:
        """Whether ``kernel`` is loaded or rejected, or the build has ended."""
        return kernel in self.kernels or kernel in self.rejected or self.finished

    def wait_for(self, kernel: str) -> None:
        """Return once :meth:`settled` says so for ``kernel``."""
        with self._cond:
            self._cond.wait_for(lambda: self.settled(kernel))

    def finish(self, seconds: float) -> None:
        """The build ended after ``seconds``: wake every waiter."""
        with self._cond:
            self.seconds, self.finished = seconds, True
            self._cond.notify_all()
