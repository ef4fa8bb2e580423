"""Fixtures for the C libraries: a mounted gdevd (tests/daemon/conftest.py) and the test
programs of progs/, built plain and with ASan/UBSan."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clib.cbuild import PROGS, clib_dir, compile_program
from tests.daemon.conftest import gdevd  # noqa: F401  (the module-scoped daemon)


class Programs:
    """Builds each program of progs/ on first use, in one temporary directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._built: dict[tuple[str, bool], Path] = {}

    def get(self, name: str, sanitized: bool = False) -> Path:
        """The executable of progs/<name>.c (ASan/UBSan-built if ``sanitized``)."""
        key = (name, sanitized)
        if key not in self._built:
            out = self.root / (name + ("-asan" if sanitized else ""))
            self._built[key] = compile_program(PROGS / f"{name}.c", out, clib_dir(sanitized),
                                               sanitized=sanitized)
        return self._built[key]


@pytest.fixture(scope="session")
def programs(tmp_path_factory: pytest.TempPathFactory) -> Programs:
    return Programs(tmp_path_factory.mktemp("clib-progs"))
