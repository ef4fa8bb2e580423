"""The /proc/gdev tree as a declarative table (:mod:`procfs.table`) of entries
(:mod:`procfs.entry`) with one generic read and write (:mod:`procfs.generic`).  In-daemon
modules declare their own entries (``Module.proc_entries``)."""

from procfs.entry import Entry, TextEntry
from procfs.generic import read_entry, write_entry
from procfs.table import ENTRIES, GLOBAL, MODULES, PER_VGPU

__all__ = ["ENTRIES", "GLOBAL", "PER_VGPU", "Entry", "read_entry", "write_entry",
           "MODULES", "TextEntry"]
