"""The scheduling tests measure shares of busy time between launches whose lengths they
choose by trip count; they run kernels on the interpreter, whose launch lengths those trip
counts were chosen for (compiled kernels finish faster than a client's round trip, so no
context would be waiting when the engine frees)."""

import pytest

from gdevd.gpu.ptx import jit


@pytest.fixture(autouse=True)
def interpreted_kernels():
    """PTX engine policy ``interp`` for the test (restored afterwards)."""
    old = jit.engine()
    jit.set_engine("interp")
    yield
    jit.set_engine(old)
