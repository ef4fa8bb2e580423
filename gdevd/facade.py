"""The one synchronous face of the runtime: Gdev's verbs for callers on other threads.

``RuntimeFacade(system, trio_token)`` has every verb of the table (``libgdev.verbs``) with
the sync contract of ``libgdev.cuda.backend.GdevBackend``; each call runs the runtime's async
verb in the loop of ``trio_token`` with ``trio.from_thread.run`` and returns its result or
raises its GdevError.  It must be called from a thread other than the loop's (in-daemon
modules use ``trio.to_thread.run_sync``).  Its users: ``kcuda`` (the daemon's CUDA layer for
in-daemon modules) and ``gdevd.gdev`` (the in-process API, over its kernel thread).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import trio

from libgdev.kernel import GdevKernel
from libgdev.verbs import HANDLE_VERBS

from . import runtime as rt


class RuntimeFacade:
    """Gdev's sync verbs over ``system`` (a running ``GdevSystem``) in another thread's loop;
    contexts it opens carry ``cred`` (None: this process's credentials)."""

    GdevKernel = GdevKernel

    def __init__(self, system: Any, trio_token: Any, cred: Any = None) -> None:
        self.system = system
        self.token = trio_token
        self.cred = cred
        for verb in HANDLE_VERBS:   # one bound verb per runtime verb, nothing written twice
            setattr(self, verb, functools.partial(self.call, getattr(rt, verb)))

    def on_loop_thread(self) -> bool:
        """Whether the caller runs in the runtime's own trio loop (where verbs cannot block)."""
        try:
            return trio.lowlevel.current_trio_token() is self.token
        except RuntimeError:
            return False

    def call(self, afn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        """Run ``afn(*args, **kw)`` (async) in the runtime's loop; its result or its error.
        RuntimeError when called from that loop's own thread (it would deadlock)."""
        if self.on_loop_thread():
            raise RuntimeError("a sync Gdev verb called on the runtime's own trio thread, "
                               "where it would deadlock: call it from trio.to_thread.run_sync")
        return trio.from_thread.run(functools.partial(afn, *args, **kw), trio_token=self.token)

    def gopen(self, minor: int, cred: Any = None) -> Any:
        """Open a context on vGPU ``minor`` with ``cred``, else the facade's credentials."""
        return self.call(rt.gopen, self.system, minor, cred=cred or self.cred)

    def gdevice_count(self) -> int:
        """The number of virtual GPUs."""
        return int(self.call(rt.gdevice_count, self.system))

    def make_kernel(self, **fields: Any) -> Any:
        """A launch descriptor (``GdevKernel``)."""
        return GdevKernel(**fields)
