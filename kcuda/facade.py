"""The sync Gdev verbs over a runtime owned by a trio loop, for callers on other threads.

``RuntimeFacade(system, trio_token)`` has Gdev's verbs with the sync contract of
``libgdev.cuda.backend.GdevBackend``; each call runs the runtime's async verb in the loop of
``trio_token`` with ``trio.from_thread.run`` and returns its result or raises its GdevError.
It must be called from a thread other than the loop's (in-daemon modules use
``trio.to_thread.run_sync``).
"""

from __future__ import annotations

import functools
from typing import Any

import trio

from gdevd import runtime as rt
from libgdev.verbs import HANDLE_VERBS


class RuntimeFacade:
    """Gdev's sync verbs over ``system`` (a running ``GdevSystem``) in another thread's loop."""

    GdevKernel = rt.GdevKernel

    def __init__(self, system: Any, trio_token: Any, cred: Any = None) -> None:
        self.system = system
        self.token = trio_token
        self.cred = cred
        for verb in HANDLE_VERBS:
            setattr(self, verb, functools.partial(self._call, getattr(rt, verb)))

    def on_loop_thread(self) -> bool:
        """Whether the caller runs in the runtime's own trio loop (where verbs cannot block)."""
        try:
            return trio.lowlevel.current_trio_token() is self.token
        except RuntimeError:
            return False

    def _call(self, fn: Any, *args: Any) -> Any:
        if self.on_loop_thread():
            raise RuntimeError("kcuda called on the runtime's own trio thread, where it would "
                               "deadlock: call it from trio.to_thread.run_sync")
        return trio.from_thread.run(fn, *args, trio_token=self.token)

    def gopen(self, minor: int) -> Any:
        """Open a context on vGPU ``minor`` with the daemon's credentials (or ``cred``)."""
        return self._call(functools.partial(rt.gopen, self.system, minor, cred=self.cred))

    def gdevice_count(self) -> int:
        """The number of virtual GPUs."""
        return int(self._call(rt.gdevice_count, self.system))

    def make_kernel(self, **fields: Any) -> Any:
        """A launch descriptor (``GdevKernel``)."""
        return rt.GdevKernel(**fields)
