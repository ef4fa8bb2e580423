"""The scheduler through a real mount: /proc/gdev/scheduler and friends, priorities set by a
libgdev client and by /proc, and gmonitor reading the tree.  Runs the real gdevd."""

from __future__ import annotations

import errno
import os
import subprocess
import sys

import pytest

import libgdev
from tests.daemon.conftest import read_text as _read
from tests.daemon.conftest import write_once as _write

pytestmark = pytest.mark.mount



def test_policy_and_queueing_switch_through_proc(gdevd) -> None:
    sched, queueing = gdevd.proc_path("scheduler"), gdevd.proc_path("queueing")
    assert _read(sched) == "[band] credit fifo null\n" and _read(queueing) == "mrq\n"
    subprocess.run(["bash", "-c", f"echo fifo > {sched}"], check=True)
    assert _read(sched) == "band credit [fifo] null\n"
    for bad in (b"rr\n", b"\n", b"fifo band\n"):
        with pytest.raises(OSError) as info:
            _write(sched, bad)
        assert info.value.errno == errno.EINVAL
    assert _read(sched) == "band credit [fifo] null\n"
    _write(sched, b"band\n")
    _write(queueing, b"sdq")
    assert _read(queueing) == "sdq\n"
    _write(queueing, b"mrq")


def test_priorities_from_libgdev_and_proc_show_in_contexts(gdevd) -> None:
    with libgdev.gopen(0, gdevd.mount) as h:
        cid = _cid_of(gdevd)
        assert h.gset_priority(5) == 5
        rows = _contexts(gdevd)
        assert rows[cid]["pid"] == str(os.getpid()) and rows[cid]["prio"] == "5"
        _write(gdevd.proc_path("priority"), b"%d 30\n" % cid)
        assert h.gget_priority() == 30
        assert h.gset_priority(None) == int(_contexts(gdevd)[cid]["prio"])
    assert cid not in _contexts(gdevd)


def _contexts(gdevd) -> dict[int, dict[str, str]]:  # type: ignore[no-untyped-def]
    lines = _read(gdevd.proc_path("contexts")).splitlines()
    head = lines[0].split()
    return {int(r.split()[0]): dict(zip(head, r.split(), strict=True)) for r in lines[1:]}


def _cid_of(gdevd) -> int:  # type: ignore[no-untyped-def]
    mine = [c for c, r in _contexts(gdevd).items() if r["pid"] == str(os.getpid())]
    assert len(mine) == 1
    return mine[0]


def test_gmonitor_prints_the_table(gdevd) -> None:
    r = subprocess.run([sys.executable, "-m", "gdevd.tools.gmonitor", "--mount", gdevd.mount,
                        "--count", "1"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "scheduler band" in r.stdout and "compute_s" in r.stdout
    assert len([line for line in r.stdout.splitlines() if "/25%" in line]) == 4
