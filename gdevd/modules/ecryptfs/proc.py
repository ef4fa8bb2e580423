"""The ecryptfs module's /proc/gdev/NAME entries (declared with the module; the FUSE front
adds them when the module is attached, with the module object as their target)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from procfs.entry import RO, RW, Entry, TextEntry

PRIO_RANGE = (0, 40)          # a GPU context's priority (Gdev's GDEV_PRIO_MIN..MAX)
THRESHOLD_RANGE = (0, 1 << 30)


def _requests(path: str) -> Callable[[Any], int]:
    return lambda m: m.stat("requests", path)


def _bytes(path: str) -> Callable[[Any], int]:
    return lambda m: m.stat("bytes", path)


ENTRIES: tuple[Entry, ...] = (
    Entry("cpu_threshold", "module", RW, "requests below this many bytes take the CPU path",
          lambda m: m.threshold, lambda m, v: m.set_threshold(v), THRESHOLD_RANGE),
    Entry("priority", "module", RW, "priority of the module's GPU context, 0..40 (larger first)",
          lambda m: m.priority, lambda m, v: setattr(m, "priority", v), PRIO_RANGE),
    TextEntry("cipher", "module", RO, "path of large requests: gpu (kcuda), helper or cpu",
              lambda m: m.cipher),
    TextEntry("last_path", "module", RO, "path the last request took: cpu, gpu, helper, none",
              lambda m: m.last_path),
    Entry("open_files", "module", RO, "open files (unload is refused while nonzero)",
          lambda m: m.busy()),
    *(Entry(f"{kind}_{path}", "module", RO, f"{kind} done on the {path} path",
            (_requests if kind == "requests" else _bytes)(path))
      for kind in ("requests", "bytes") for path in ("cpu", "gpu", "helper")),
)
