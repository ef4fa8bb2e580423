"""One table of bounds: every numeric /proc/gdev tunable, the config file's machine fields
and the copy engine's C checks agree with ``gdevd.runtime.defaults.BOUNDS``."""

from __future__ import annotations

import errno

import pytest

from gdevd.errors import GdevError
from gdevd.gpu import copyengine
from gdevd.runtime import GdevConfig, tunables
from gdevd.runtime import defaults as D
from procfs import ENTRIES

# GdevConfig field -> its /proc/gdev name, where they differ
CONFIG_NAMES = {"period_us": "period"}


def test_every_bounded_entry_takes_its_bounds_from_the_table() -> None:
    bounded = [e for e in ENTRIES if e.bounds is not None]
    assert len(bounded) >= 20
    for e in bounded:
        assert e.bounds == D.BOUNDS[e.name], e.name


@pytest.mark.parametrize("field", ["period_us", "swap_percent", "ioctl_poll_us", "chunk_size",
                                   "pipeline_count", "iowrite_limit", "ioread_limit"])
def test_the_config_refuses_exactly_what_proc_refuses(field: str) -> None:
    lo, hi = D.BOUNDS[CONFIG_NAMES.get(field, field)]
    for ok in (lo, hi):
        GdevConfig(**{field: ok}).validate()
    for bad in (lo - 1, hi + 1):
        with pytest.raises(GdevError) as info:
            GdevConfig(**{field: bad}).validate()
        assert info.value.errno == errno.EINVAL and field in str(info.value)


def test_the_chunk_bounds_are_the_copy_engines() -> None:
    assert D.BOUNDS["chunk_size"] == (copyengine.CHUNK_MIN, copyengine.CHUNK_MAX)
    assert D.BOUNDS["pipeline_count"][1] == copyengine.DEPTH_MAX


def test_the_setters_check_bounds_themselves() -> None:
    """A caller that skips procfs' checks still cannot set an out-of-range value."""
    with pytest.raises(GdevError) as info:
        tunables.check("slice_us", D.BOUNDS["slice_us"][1] + 1)
    assert info.value.errno == errno.EINVAL and "slice_us" in str(info.value)
    with pytest.raises(GdevError):
        tunables.check("guest", True)   # a bool is not a number here
