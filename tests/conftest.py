"""Fixtures for every test directory."""

from __future__ import annotations

import pytest

from tests.loopback import Loopback


@pytest.fixture
def loopback() -> Loopback:
    """A real gdevd ioctl server in-process, without FUSE, each client on a socketpair
    (tests/loopback.py): ``loopback.serve(client)`` or ``loopback.run(body, minors)``."""
    return Loopback()
