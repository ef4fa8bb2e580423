"""Every PTX test runs on both engines: the interpreter (the reference) and the compiling
engine (``gdevd.gpu.ptx.jit``; kernels it does not translate fall back to the interpreter,
as in the daemon), so each expected value is also a differential check between them."""

import shutil
from pathlib import Path

import pytest

from gdevd.gpu.ptx import jit
from gdevd.gpu.ptx.jit import build


@pytest.fixture(autouse=True, params=["interp", "jit"])
def engine(request):
    """The engine policy of the test (restored afterwards)."""
    old = jit.engine()
    jit.set_engine(request.param)
    yield request.param
    jit.set_engine(old)


@pytest.fixture
def wrapped_cc(tmp_path, monkeypatch):
    """Install a ``cc`` wrapper built from a shell line (``$@`` = the arguments); yields
    the directory the wrapper may write to."""
    real = shutil.which("cc")
    out = tmp_path / "wrapper-out"
    out.mkdir()

    def install(body: str) -> Path:
        script = tmp_path / "cc-wrapper"
        script.write_text(f"#!/bin/sh\nOUT={out}\nREAL={real}\n{body}\n")
        script.chmod(0o755)
        monkeypatch.setenv("CC", str(script))
        build.compiler.cache_clear()
        return out

    yield install
    build.compiler.cache_clear()     # monkeypatch restores $CC after this teardown
