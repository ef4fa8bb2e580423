"""A listing of an ecryptfs directory is one snapshot of the lower directory, read once: a
large directory costs one read however many chunks the kernel asks for (it used to be read
again for every chunk, quadratic work on the event loop), and a name created during the
listing neither repeats an entry nor hides one."""

from __future__ import annotations

import os

import pytest

from tests.hostile.conftest import HostileFs

pytestmark = pytest.mark.mount


def test_a_listing_is_one_snapshot(hfs: HostileFs) -> None:
    os.mkdir(os.path.join(hfs.view, "big"))
    lower = os.path.join(hfs.lower, "big")
    names = [f"f{i:04d}" for i in range(400)]  # many kernel chunks of ~25 entries
    for name in names:
        open(os.path.join(lower, name), "wb").close()
    with os.scandir(os.path.join(hfs.view, "big")) as it:
        seen = [next(it).name]
        open(os.path.join(lower, "0000"), "wb").close()  # sorts first: would shift the rest
        seen += [e.name for e in it]
    assert len(seen) == len(set(seen)), "an entry was listed twice"
    assert set(names) <= set(seen)
    assert "0000" in os.listdir(os.path.join(hfs.view, "big"))  # the next listing sees it
