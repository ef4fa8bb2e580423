"""A context's device-printf buffer (CUDA's printf FIFO, ``cudaLimitPrintfFifoSize``).

The compute engine appends what the context's kernels print (``vprintf``,
gdevd/gpu/ptx/ops_printf.py; a launch's text in block order: printorder.py); the context's
client takes it with PRINTF_DRAIN at its synchronization points and writes it to its own
stdout, as CUDA's runtime does.  The
buffer holds at most ``limit`` bytes: what a kernel prints beyond that is dropped, as on a
GPU, and the next drain says how much with one line of its own, so nothing is lost silently.
Invariant: ``len(self._data) <= self.limit``; every access holds ``_lock`` (two threads).
"""

from __future__ import annotations

import threading


class PrintfBuffer:
    """Bounded bytes, appended by the engine thread, drained by the runtime's loop."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._data = bytearray()
        self._dropped = 0
        self._lock = threading.Lock()

    def write(self, text: bytes) -> None:
        """Append ``text`` (what fits; the rest is counted as dropped)."""
        with self._lock:
            room = self.limit - len(self._data)
            self._data += text[:max(room, 0)]
            self._dropped += max(len(text) - max(room, 0), 0)

    def drain(self, size: int) -> bytes:
        """Up to ``size`` bytes, oldest first, removed from the buffer; a note of how many
        bytes were dropped comes first once they have all been taken."""
        with self._lock:
            out = bytes(self._data[:size])
            del self._data[:size]
            if self._dropped and not self._data and len(out) < size:
                note = (f"[gdev: {self._dropped} bytes of device printf output dropped: "
                        f"the buffer holds {self.limit} bytes between synchronizations]\n")
                out += note.encode()[:size - len(out)]
                self._dropped = 0
            return out

    def full(self) -> bool:
        """Whether nothing more fits (the engine then stops formatting: ops_printf.py)."""
        return self.room() <= 0

    def room(self) -> int:
        """Bytes that still fit; a launch's held text counts against it (printorder.py)."""
        with self._lock:
            return self.limit - len(self._data)

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)
