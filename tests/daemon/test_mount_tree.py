"""The mounted tree: device files, /proc/gdev reads and writes, permissions, the CLI's
refusals.  Runs the real gdevd (conftest.start_gdevd)."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys

import pytest
from conftest import VD_256M, run_as, start_gdevd, stop_gdevd

from procfs import GLOBAL, PER_VGPU
from tests.daemon.conftest import read_text as _read
from tests.daemon.conftest import write_once as _write

pytestmark = pytest.mark.mount

VD_ENTRIES = {"compute_bandwidth", "memory_bandwidth", "memory_share", "period",
              "compute_bandwidth_used", "memory_bandwidth_used", "phys", "memory_size",
              "memory_used", "swap_out_bytes", "swap_out_count", "swap_in_bytes",
              "swap_in_count", "swapped_bytes"}
GLOBAL_ENTRIES = {"device_count", "virtual_device_count", "swap_percent", "swap_size",
                  "swap_used", "host_swap_size", "host_swap_used", "shm", "contexts"}



def test_tree_layout(gdevd) -> None:
    assert sorted(os.listdir(os.path.join(gdevd.mount, "dev"))) == [f"gdev{i}" for i in range(4)]
    assert set(os.listdir(gdevd.proc_path())) == {e.name for e in GLOBAL} | {
        "vd0", "vd1", "vd2", "vd3", "modules"} and {"device_count", "virtual_device_count"} <= \
        {e.name for e in GLOBAL}
    assert set(os.listdir(gdevd.proc_path("vd2"))) == {e.name for e in PER_VGPU} >= VD_ENTRIES
    st = os.stat(gdevd.dev(0))
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o666


def test_proc_values_end_with_a_newline(gdevd) -> None:
    assert _read(gdevd.proc_path("device_count")) == "1\n"
    assert _read(gdevd.proc_path("virtual_device_count")) == "4\n"
    assert _read(gdevd.proc_path("vd1", "period")) == "30000\n"
    assert _read(gdevd.proc_path("vd3", "memory_size")) == f"{VD_256M}\n"
    assert os.stat(gdevd.proc_path("vd1", "period")).st_size == len("30000\n")


def test_echo_into_proc_works_and_bad_values_change_nothing(gdevd) -> None:
    path = gdevd.proc_path("vd1", "compute_bandwidth")
    subprocess.run(["bash", "-c", f"echo 20 > {path}"], check=True)
    assert _read(path) == "20\n"
    for bad in (b"101\n", b"-1\n", b"abc\n", b"\n", b"1" * 80):
        with pytest.raises(OSError) as info:
            _write(path, bad)
        assert info.value.errno == errno.EINVAL
    assert _read(path) == "20\n"
    r = subprocess.run(["bash", "-c", f"echo 200 > {path}"], capture_output=True, text=True)
    assert r.returncode != 0 and "Invalid argument" in r.stderr
    subprocess.run(["bash", "-c", f"echo 25 > {path}"], check=True)


def test_memory_share_changes_memory_size(gdevd) -> None:
    share, size = gdevd.proc_path("vd2", "memory_share"), gdevd.proc_path("vd2", "memory_size")
    _write(share, b"50\n")
    try:
        assert _read(size) == f"{120_795_136}\n"  # half of 256 MiB less the swap area
    finally:
        _write(share, b"25\n")
    assert _read(size) == f"{VD_256M}\n"


def test_write_at_nonzero_offset_and_readonly_entries_refused(gdevd) -> None:
    fd = os.open(gdevd.proc_path("vd0", "period"), os.O_WRONLY)
    try:
        with pytest.raises(OSError) as info:
            os.pwrite(fd, b"100", 3)
        assert info.value.errno == errno.EINVAL
    finally:
        os.close(fd)
    with pytest.raises(OSError) as info:  # root may open a 0444 file; the write is refused
        _write(gdevd.proc_path("vd0", "memory_used"), b"0\n")
    assert info.value.errno == errno.EINVAL


def test_chmod_chown_of_device_files(gdevd, unprivileged) -> None:
    path = gdevd.dev(3)
    os.chmod(path, 0o600)
    os.chown(path, unprivileged[0], unprivileged[1])
    try:
        st = os.stat(path)
        assert (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid) == (0o600, *unprivileged)
    finally:
        os.chown(path, 0, 0)
        os.chmod(path, 0o666)
    with pytest.raises(PermissionError):
        os.chmod(gdevd.proc_path("vd0", "period"), 0o666)


def test_unprivileged_user_refused_on_0600_device_and_proc_writes(gdevd, unprivileged) -> None:
    os.chmod(gdevd.dev(2), 0o600)
    code = f"""
import errno, libgdev
try:
    libgdev.gopen(2)
    print("opened")
except PermissionError:
    print("EACCES")
with libgdev.gopen(1) as h:
    print("gdev1", h.gquery(libgdev.GDEV_QUERY_DEVICE_MEM_SIZE))
try:
    open({gdevd.proc_path("vd1", "period")!r}, "w").write("5")
except PermissionError:
    print("proc EACCES")
print(open({gdevd.proc_path("vd1", "period")!r}).read().strip())
"""
    try:
        r = run_as(unprivileged, code, gdevd.env())
    finally:
        os.chmod(gdevd.dev(2), 0o666)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:4] == ["EACCES", f"gdev1 {VD_256M}", "proc EACCES", "30000"]


def test_cli_refuses_missing_nonempty_and_mounted(gdevd, tmp_path) -> None:
    def gdevd_cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "gdevd", *args, "--foreground"],
                              capture_output=True, text=True, timeout=30)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    for path, why in [(tmp_path / "missing", "does not exist"), (tmp_path / "full", "not empty"),
                      (gdevd.mount, "already a mount point")]:
        r = gdevd_cli(str(path))
        assert r.returncode == 2 and why in r.stderr, r.stderr
    (tmp_path / "empty").mkdir()
    r = gdevd_cli(str(tmp_path / "empty"), "--memory", "lots")
    assert r.returncode == 2 and "not a size" in r.stderr


def test_sigterm_unmounts_cleanly() -> None:
    d = start_gdevd("--gpus", "2", "--vgpus", "1")
    assert sorted(os.listdir(os.path.join(d.mount, "dev"))) == ["gdev0", "gdev1"]
    assert _read(d.proc_path("device_count")) == "2\n"
    assert [_read(d.proc_path(f"vd{i}", "phys")) for i in (0, 1)] == ["0\n", "1\n"]
    assert _read(d.proc_path("vd1", "memory_size")) == f"{241_594_368}\n"  # 100% of GPU 1
    # outside its 10 % swap area
    d.proc.terminate()
    assert d.proc.wait(15) == 0
    assert not os.path.ismount(d.mount)
    stop_gdevd(d)


def test_detaches_and_config_file(tmp_path) -> None:
    import tempfile

    base = tempfile.mkdtemp(prefix="gdevd-test-")
    mount = os.path.join(base, "mnt")
    os.mkdir(mount)
    cfg = tmp_path / "gdev.toml"
    cfg.write_text('vgpus = 2\nmemory = "64M"\n')
    try:
        r = subprocess.run([sys.executable, "-m", "gdevd", mount, "--config", str(cfg)],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr  # returns once the mount is ready
        assert _read(os.path.join(mount, "proc", "gdev", "virtual_device_count")) == "2\n"
        assert _read(os.path.join(mount, "proc", "gdev", "vd1", "memory_size")) == \
            f"{30_199_808}\n"  # half of 64 MiB less the swap area
    finally:
        subprocess.run(["fusermount3", "-u", mount], check=False)  # the daemon then exits
    import shutil
    shutil.rmtree(base, ignore_errors=True)


def test_non_root_without_user_allow_other_is_refused(unprivileged, tmp_path) -> None:
    conf = tmp_path / "fuse.conf"
    conf.write_text("#user_allow_other\n")
    os.chmod(tmp_path, 0o755)
    os.chmod(conf, 0o644)
    code = f"""
from gdevd.__main__ import Refused, check_privileges
try:
    check_privileges({str(conf)!r})
except Refused as exc:
    print("refused:", exc)
"""
    r = run_as(unprivileged, code, os.environ.copy(), preload="import gdevd.__main__\n")
    assert "refused: mounting for all users (allow_other) needs root" in r.stdout, r.stderr


def test_staging_shrinks_to_fit_a_small_pinned_share(tmp_path) -> None:
    cfg = tmp_path / "gdev.toml"
    # 2 MiB of pinned memory per vGPU; sizes as text for every size key
    cfg.write_text('dma_memory = "8M"\npinned_per_session = "2M"\n')
    d = start_gdevd("--config", str(cfg))
    try:
        code = """
import numpy
with libgdev.gopen(0) as h:
    a = h.gmalloc(3 << 20)
    x = numpy.arange(3 << 20, dtype=numpy.uint8)
    h.gmemcpy_to_device(a, x)
    y = numpy.empty_like(x)
    h.gmemcpy_from_device(y, a)
    print((x == y).all(), h._staging.chunk * h._staging.slots)
"""
        r = run_as(None, code, d.env())
        assert r.stdout.split() == ["True", str(2 << 20)], r.stderr
    finally:
        stop_gdevd(d)
