"""One launch's device ``printf`` text in block order, whichever engine runs it.

Blocks of a launch run in an order the engine chooses: the interpreter a wave of several
blocks at a time, lane by lane; the compiling engine blocks in parallel on its engine
threads.  So that a program prints the same text on both engines, run after run, a
launch's text reaches its sink (the context's printf buffer) block after block: each
block's calls in the order they ran, the lowest block first.  The text of the lowest
unfinished block goes straight through; a higher block's is held until every block below
it has finished (:meth:`BlockOrder.release_below`), and all of it when the launch ends or
faults (:meth:`BlockOrder.flush`).  A GPU orders printf by time across blocks; this order
differs from that only between blocks that wait for each other (a cooperative grid's
sync, a flag set by a higher block), never within one block.

Held text counts against the sink's room (``room()``, PrintfBuffer's), so a launch holds no
more than its context's buffer would: once it is used up, ``full()`` is true and printf
returns -1, as CUDA's when its buffer is full.  A sink without ``room()`` is asked
``full()`` itself, if it has one.
"""

from __future__ import annotations

import threading


class BlockOrder:
    """A launch's printf sink wrapper: ``write(block, text)``, ``full()``; see above.

    Invariant: every block below ``_next`` has finished and its text is in the sink;
    ``_held`` is the number of bytes in ``_text``, all of blocks above ``_next``."""

    def __init__(self, sink) -> None:
        self.sink = sink
        self._text: dict[int, bytearray] = {}
        self._held = 0
        self._next = 0
        self._lock = threading.Lock()

    def full(self) -> bool:
        """Whether nothing more fits: the sink's room is used up by it and held text."""
        room = getattr(self.sink, "room", None)
        if room is not None:
            with self._lock:
                return self._held >= room()
        return bool(getattr(self.sink, "full", lambda: False)())

    def write(self, block: int, text: bytes) -> None:
        """Block ``block`` printed ``text``."""
        with self._lock:
            if block <= self._next:
                self.sink.write(text)
                return
            self._text.setdefault(block, bytearray()).extend(text)
            self._held += len(text)

    def release_below(self, block: int) -> None:
        """Every block below ``block`` has finished: hand their text over, in order, and
        the text of ``block`` itself (now the lowest unfinished)."""
        with self._lock:
            if block <= self._next:
                return
            self._next = block
            for b in sorted(k for k in self._text if k <= block):
                self._hand(b)

    def flush(self) -> None:
        """The launch ended (or faulted): hand over all held text, in block order."""
        with self._lock:
            for b in sorted(self._text):
                self._hand(b)
            self._next = 1 << 62

    def _hand(self, block: int) -> None:
        text = self._text.pop(block)
        self._held -= len(text)
        self.sink.write(bytes(text))
