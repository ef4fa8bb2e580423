"""The /proc/gdev tree as a declarative table (:mod:`procfs.table`) with one generic read and
write (:mod:`procfs.generic`)."""

from procfs.generic import read_entry, write_entry
from procfs.table import ENTRIES, GLOBAL, MODULE_ENTRIES, MODULES, PER_VGPU, Entry, TextEntry

__all__ = ["ENTRIES", "GLOBAL", "PER_VGPU", "Entry", "read_entry", "write_entry",
           "MODULES", "MODULE_ENTRIES", "TextEntry"]
