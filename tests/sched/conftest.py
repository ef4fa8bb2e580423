"""Fixtures of the scheduler's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gdevd.gpu.ptx import jit


@pytest.fixture
def interpreted() -> Iterator[None]:
    """The interpreter for every launch: measurements of shares and slices must not depend
    on whether a kernel's native code is ready (it may be built in the background in the
    middle of a measurement, or come from the disk cache and run 10x faster)."""
    before = jit.engine()
    jit.set_engine("interp")
    try:
        yield
    finally:
        jit.set_engine(before)
