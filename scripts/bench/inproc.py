"""A gdevd in the benchmark's own process, for benchmarks that call its runtime directly
(kcuda, the ecryptfs module's file layer) rather than through the mount."""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import trio

from gdevd.daemon import DaemonConfig, serve
from gdevd.runtime import GdevConfig

T = TypeVar("T")
MiB = 1 << 20


def with_daemon(fn: Callable[[str], T], prefix: str, memory: int = 512 * MiB) -> T:
    """Start a gdevd (one vGPU of ``memory`` bytes) on a fresh mount in a temporary
    directory named from ``prefix``, run ``fn(mount)`` on a thread of its own, then stop
    the daemon; ``fn``'s result, or its exception raised again once the daemon stopped."""
    base = tempfile.mkdtemp(prefix=prefix)
    mount = os.path.join(base, "mnt")
    os.mkdir(mount)
    cfg = DaemonConfig(mount, GdevConfig(memory=memory, vgpus=1).validate())
    box: dict[str, Any] = {}

    def bench(token: Any) -> None:
        try:
            box["result"] = fn(mount)
        except BaseException as exc:  # raised again after the daemon stopped
            box["error"] = exc
        finally:
            import pyfuse3

            trio.from_thread.run_sync(pyfuse3.terminate, trio_token=token)

    def ready() -> None:
        token = trio.lowlevel.current_trio_token()
        threading.Thread(target=bench, args=(token,), daemon=True).start()

    trio.run(serve, cfg, ready)
    if "error" in box:
        raise box["error"]
    return box["result"]
