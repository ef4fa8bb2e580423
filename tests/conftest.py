"""Fixtures for every test directory."""

from __future__ import annotations

import pytest

from tests import jitwarm
from tests.loopback import Loopback


@pytest.fixture
def loopback() -> Loopback:
    """A real gdevd ioctl server in-process, without FUSE, each client on a socketpair
    (tests/loopback.py): ``loopback.serve(client)`` or ``loopback.run(body, minors)``."""
    return Loopback()


@pytest.fixture(scope="session", autouse=True)
def _warm_jit_cache(tmp_path_factory):
    """Compile the repository's PTX modules into the session's JIT cache once, beside the
    tests (tests/jitwarm.py); stopped at the end of the session."""
    jitwarm.start(tmp_path_factory.mktemp("jitwarm") / "precompile.log")
    yield
    jitwarm.stop()
