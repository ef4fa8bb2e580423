"""Every PTX test runs on both engines: the interpreter (the reference) and the compiling
engine (``gdevd.gpu.ptx.jit``; kernels it does not translate fall back to the interpreter,
as in the daemon), so each expected value is also a differential check between them."""

import pytest

from gdevd.gpu.ptx import jit


@pytest.fixture(autouse=True, params=["interp", "jit"])
def engine(request):
    """The engine policy of the test (restored afterwards)."""
    old = jit.engine()
    jit.set_engine(request.param)
    yield request.param
    jit.set_engine(old)
