"""The package imports and its C core is built and of the expected version."""

from gdevd.gpu import _core


def test_core_version() -> None:
    assert _core.lib.gdev_core_version() == 1
