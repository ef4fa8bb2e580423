"""libgdev.so against a mounted gdevd: Gdev's madd through gdev.h on each copy path (inline,
staged, pinned), plain and under ASan/UBSan, and the error paths with their reasons."""

from __future__ import annotations

import subprocess

import pytest

from tests.clib.cbuild import ROOT, sanitizer_env

MADD_PTX = str(ROOT / "kernels" / "madd.ptx")


@pytest.mark.parametrize("n,mode", [(16, ""), (700, ""), (300, "pinned")],
                         ids=["inline", "staged", "pinned"])
def test_madd_through_gdev_h(gdevd, programs, n: int, mode: str) -> None:
    exe = programs.get("madd_gdev")
    res = subprocess.run([str(exe), MADD_PTX, str(n), *([mode] if mode else [])],
                         env=gdevd.env(), capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"madd ok n={n} mem=")


@pytest.mark.parametrize("mode", ["", "pinned"])
def test_madd_under_asan_ubsan(gdevd, programs, mode: str) -> None:
    exe = programs.get("madd_gdev", sanitized=True)
    res = subprocess.run([str(exe), MADD_PTX, "300", *([mode] if mode else [])],
                         env=sanitizer_env(gdevd.env()), capture_output=True, text=True,
                         timeout=180)
    assert res.returncode == 0, res.stderr
    assert "madd ok" in res.stdout


@pytest.mark.parametrize("case,reason", [
    ("beyond-share", "GMALLOC"), ("bad-pointer", "GMEMCPY_TO_DEVICE"), ("bad-free", "GFREE"),
    ("unknown-kernel", "GLAUNCH"), ("bad-dma-free", "not a gmalloc_dma buffer"),
    ("gsync-timeout-zero", ""), ("dma-adjacent", ""), ("guest", ""),
])
def test_error_paths(gdevd, programs, case: str, reason: str) -> None:
    exe = programs.get("gdev_errors", sanitized=True)
    res = subprocess.run([str(exe), case], env=sanitizer_env(gdevd.env()), capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    assert reason in res.stdout
    assert "Traceback" not in gdevd.log_text()


def test_no_daemon_names_the_mount(programs, tmp_path) -> None:
    exe = programs.get("gdev_errors")
    env = {"GDEV_MOUNT": str(tmp_path / "nothing"), "PATH": "/usr/bin:/bin"}
    res = subprocess.run([str(exe), "no-daemon"], env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    mount = tmp_path / "nothing"
    assert f"no gdevd at {mount} (GDEV_MOUNT={mount}): start it with `gdevd {mount}`" \
        in res.stdout


@pytest.mark.parametrize("spin_us", ["0", "5000"])
def test_madd_blocking_and_spinning(gdevd, programs, spin_us: str) -> None:
    """LIBGDEV_SPIN_US=0 waits for every reply in recvmsg; a long window polls for each."""
    exe = programs.get("madd_gdev")
    env = {**gdevd.env(), "LIBGDEV_SPIN_US": spin_us}
    res = subprocess.run([str(exe), MADD_PTX, "40"], env=env, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
