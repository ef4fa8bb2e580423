"""A build's scratch directory (gdevd/gpu/ptx/jit/scratch.py): named for its process, and
removed by a later process once that process is gone; nothing else is touched.  (That a
killed compile leaves its files there and nowhere else: test_jit_jobs.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import pytest

from gdevd.gpu.ptx.jit import scratch

only_jit = pytest.mark.parametrize("engine", ["jit"], indirect=True)


@pytest.fixture
def systmp(tmp_path, monkeypatch):
    """The system's temporary directory, for this test only."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


@only_jit
def test_a_build_directory_is_named_for_its_process(systmp):
    with scratch.build_dir() as d:
        assert os.path.dirname(d) == str(systmp)
        assert os.path.basename(d).startswith(f"gdev-jit-{os.getpid()}-")
        assert os.stat(d).st_mode & 0o777 == 0o700
    assert not os.path.exists(d)


@only_jit
def test_only_the_directories_of_dead_processes_are_removed(systmp):
    dead = systmp / f"gdev-jit-{_dead_pid()}-abc"
    (dead / "sub").mkdir(parents=True)
    (dead / "sub" / "ccXYZ.s").write_text("x")
    mine = systmp / f"gdev-jit-{os.getpid()}-def"
    mine.mkdir()
    parent = systmp / f"gdev-jit-{os.getppid()}-ghi"
    parent.mkdir()
    other = systmp / "gdev-jit-cache-jkl"            # not a build directory
    other.mkdir()
    target = systmp / "target"
    target.mkdir()
    (target / "keep").write_text("x")
    link = systmp / f"gdev-jit-{_dead_pid()}-lnk"       # a link is never followed
    link.symlink_to(target)
    assert scratch.sweep_stale.__wrapped__() == 1
    assert not dead.exists()
    assert mine.exists() and parent.exists() and other.exists()
    assert link.is_symlink() and (target / "keep").exists()
