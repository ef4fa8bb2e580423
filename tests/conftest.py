"""Fixtures for every test directory."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

from tests import jitwarm
from tests.loopback import Loopback

# Under CI every property test draws the same examples, so whether a change lands does not
# depend on the draw; a developer's run draws new ones each time and keeps looking.
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


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
