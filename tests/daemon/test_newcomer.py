"""A newcomer's mistakes, from the README's commands, each answered with what to do.

Covered elsewhere and not repeated here: opening a device with no daemon
(test_mount_errors), a stale mount at start (test_service) and at open (test_mount_errors),
shares over 100 % (test_mount_tools), a detached start (test_service), an unknown kernel
name, a ``.cu`` file with and without nvcc, an int for a float parameter
(tests/cuda/test_ergonomics.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from tests.daemon.conftest import read_text, start_gdevd, stop_gdevd

CU_INIT = "import libgdev.cuda as c\ntry:\n    c.cuInit(0)\nexcept c.CudaError as e:\n" \
          "    print(e)\n"


def _cu_init(mount: str) -> str:
    r = subprocess.run([sys.executable, "-c", CU_INIT], capture_output=True, text=True,
                       env={**os.environ, "GDEV_MOUNT": mount}, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


GDEV_RUN = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "gdev-run")


def _gdev_run(mount: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([GDEV_RUN, "--mount", mount, "true"], capture_output=True,
                          text=True, timeout=60)


def test_cuinit_and_gdev_run_without_a_daemon_say_how_to_start_one(tmp_path) -> None:
    mount = str(tmp_path / "mnt")
    out = _cu_init(mount)
    assert "CUDA_ERROR_NO_DEVICE" in out and f"start it with `gdevd {mount}`" in out, out
    r = _gdev_run(mount)
    assert r.returncode == 2 and f"start it with `gdevd {mount}`" in r.stderr, r.stderr


@pytest.mark.mount
def test_cuinit_and_gdev_run_on_a_stale_mount_name_the_command_that_clears_it() -> None:
    d = start_gdevd()
    try:
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait()
        out = _cu_init(d.mount)
        assert "stale mount" in out and f"fusermount3 -u {d.mount}" in out, out
        r = _gdev_run(d.mount)
        assert "stale mount" in r.stderr and f"fusermount3 -u {d.mount}" in r.stderr
    finally:
        subprocess.run(["fusermount3", "-u", "-z", d.mount], check=False)
        stop_gdevd(d)


def _echo(value: str, path: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", f"echo {value} > {path}"], capture_output=True,
                          text=True, timeout=60)


@pytest.mark.mount
def test_a_mistyped_proc_path_is_no_such_file_and_the_log_names_the_entry(gdevd) -> None:
    r = _echo("30", gdevd.proc_path("vd0", "compute_bandwith"))
    assert r.returncode != 0 and "No such file or directory" in r.stderr, r.stderr
    log = gdevd.log_text()
    assert "/proc/gdev/vd0/compute_bandwith: no such entry" in log
    assert "did you mean compute_bandwidth?" in log and "/proc/gdev/help lists" in log
    r = _echo("30000", gdevd.proc_path("period"))   # a vGPU's entry written at the top
    assert "No such file or directory" in r.stderr, r.stderr
    assert "/proc/gdev/period: no such entry here; it is /proc/gdev/vd0/period (one per " \
           "vGPU: vdN/period)" in gdevd.log_text()


@pytest.mark.mount
def test_a_bad_proc_write_is_logged_once_with_why(gdevd) -> None:
    r = _echo("1.5", gdevd.proc_path("vd1", "period"))
    assert r.returncode != 0 and "Invalid argument" in r.stderr
    log = gdevd.log_text()
    assert log.count("/proc/gdev/vd1/period: refused b'1.5\\n'") == 1, log
    assert "not an unsigned integer" in log
    help_text = read_text(gdevd.proc_path("help"))   # where the writer finds the rule
    assert "vdN/period (rw 1..4294967295): budget period" in help_text


@pytest.mark.mount
def test_a_write_split_at_a_wrong_offset_is_logged_with_why(gdevd) -> None:
    fd = os.open(gdevd.proc_path("vd2", "period"), os.O_WRONLY)
    try:
        with pytest.raises(OSError):
            os.pwrite(fd, b"30000\n", 7)
    finally:
        os.close(fd)
    assert "/proc/gdev/vd2/period: refused b'30000\\n': write at offset 7, not 0" in \
        gdevd.log_text()


def test_help_lists_every_entry_with_its_bounds() -> None:
    from procfs import ENTRIES
    from procfs.table import describe

    text = describe(ENTRIES)
    assert len(text.splitlines()) == len(ENTRIES)
    assert "chunk_size (rw 4096..33554432):" in text and "vdN/guest (rw 0..1):" in text
