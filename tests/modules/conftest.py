"""Fixtures for in-daemon modules: a runtime on its own thread with kcuda attached to it.

``kcuda_system`` is that runtime (module-scoped); a test that used it ends with ``fsck()``:
no handle left, nothing allocated.  ``lower`` is a fresh lower directory.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import kcuda
from tests.cuda.conftest import KernelThread


@pytest.fixture(scope="module")
def kcuda_system() -> Iterator[KernelThread]:
    kt = KernelThread().start()
    kcuda.attach(kt.system, kt.token)
    try:
        yield kt
    finally:
        kcuda.detach()
        kt.stop()


@pytest.fixture
def lower(tmp_path: Any) -> str:
    d = tmp_path / "lower"
    d.mkdir()
    return str(d)
