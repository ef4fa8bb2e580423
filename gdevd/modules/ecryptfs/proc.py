"""The ecryptfs module's statistics record and its /proc/gdev/NAME entries (declared with the
module; the FUSE front adds them when the module is attached, the module as their target).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from procfs.entry import RO, RW, Entry, TextEntry

if TYPE_CHECKING:
    from .module import EcryptfsModule

PRIO_RANGE = (0, 40)          # a GPU context's priority (Gdev's GDEV_PRIO_MIN..MAX)
THRESHOLD_RANGE = (0, 1 << 30)
PATHS = ("cpu", "gpu", "helper")


@dataclass(frozen=True)
class EcryptfsStats:
    """One ecryptfs instance: its tunables, the path of large requests and of the last one,
    open files, and requests and bytes per path."""

    cpu_threshold: int
    priority: int
    cipher: str
    last_path: str
    open_files: int
    requests: dict[str, int]
    bytes: dict[str, int]


def stats(m: EcryptfsModule) -> EcryptfsStats:
    """A snapshot of module ``m``."""
    return EcryptfsStats(m.threshold, m.priority, m.cipher, m.last_path, m.busy(),
                         {p: m.stat("requests", p) for p in PATHS},
                         {p: m.stat("bytes", p) for p in PATHS})


def _field(name: str) -> Callable[[Any], Any]:
    return lambda m: getattr(stats(m), name)


def _per_path(kind: str, path: str) -> Callable[[Any], int]:
    return lambda m: int(getattr(stats(m), kind)[path])


ENTRIES: tuple[Entry, ...] = (
    Entry("cpu_threshold", "module", RW, "requests below this many bytes take the CPU path",
          _field("cpu_threshold"), lambda m, v: m.set_threshold(v), THRESHOLD_RANGE),
    Entry("priority", "module", RW, "priority of the module's GPU context, 0..40 (larger first)",
          _field("priority"), lambda m, v: setattr(m, "priority", v), PRIO_RANGE),
    TextEntry("cipher", "module", RO, "path of large requests: gpu (kcuda), helper or cpu",
              _field("cipher")),
    TextEntry("last_path", "module", RO, "path the last request took: cpu, gpu, helper, none",
              _field("last_path")),
    Entry("open_files", "module", RO, "open files (unload is refused while nonzero)",
          _field("open_files")),
    *(Entry(f"{kind}_{path}", "module", RO, f"{kind} done on the {path} path",
            _per_path(kind, path))
      for kind in ("requests", "bytes") for path in PATHS),
)
