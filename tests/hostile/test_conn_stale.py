"""D20: what a killed daemon leaves behind is named and cleared.

After SIGKILL the mount is stale: a client's open says so with the command that clears it,
and so does a new gdevd asked to mount there.  The killed daemon's socket directory is
removed by the next daemon's start; a live daemon's directory is never touched.

The daemons here keep their socket directories in a private TMPDIR: any gdevd starting on
the machine (another test process's) cleans the shared one, and would remove the killed
daemon's directory before this test looks for it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator

import pytest

import libgdev
from libgdev import gate
from tests.daemon.conftest import start_gdevd, stop_gdevd

pytestmark = pytest.mark.mount


def _socket_dir(d) -> str:  # type: ignore[no-untyped-def]
    fd, ticket = gate.open_gate(0, d.mount)
    os.close(fd)
    return os.path.dirname(ticket.socket)


@pytest.fixture
def private_tmp() -> Iterator[dict[str, str]]:
    """An environment whose TMPDIR no other gdevd on the machine cleans."""
    with tempfile.TemporaryDirectory(prefix="gdevd-stale-") as tmp:
        os.chmod(tmp, 0o755)
        yield {**os.environ, "TMPDIR": tmp}


def test_killed_daemon_leaves_a_named_stale_mount_and_a_dir_the_next_start_removes(
        private_tmp: dict[str, str]) -> None:
    live = start_gdevd(env=private_tmp)
    killed = start_gdevd(env=private_tmp)
    try:
        live_dir, killed_dir = _socket_dir(live), _socket_dir(killed)
        killed.proc.send_signal(signal.SIGKILL)
        killed.proc.wait()
        with pytest.raises(OSError) as info:
            libgdev.gopen(0, killed.mount)
        assert "stale mount" in str(info.value) and "fusermount3 -u" in str(info.value)
        r = subprocess.run([sys.executable, "-m", "gdevd", killed.mount, "--foreground"],
                           capture_output=True, text=True, timeout=60, env=private_tmp)
        assert r.returncode == 2 and "stale mount" in r.stderr and "fusermount3 -u" in r.stderr
        assert os.path.isdir(killed_dir)
        nxt = start_gdevd(env=private_tmp)
        try:
            assert not os.path.exists(killed_dir)      # cleaned at the next start
            assert os.path.isdir(live_dir)             # a live daemon's is left alone
            with libgdev.gopen(0, live.mount) as h:
                h.gfree(h.gmalloc(4096))
        finally:
            stop_gdevd(nxt)
    finally:
        stop_gdevd(killed)
        stop_gdevd(live)
