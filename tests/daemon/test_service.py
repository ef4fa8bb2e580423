"""Operating gdevd: the configuration file (machine, [daemon], [proc], [dev]), --version, log
levels, the pidfile, a detached start that says where it serves, and the systemd unit."""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import time

import pytest

from gdevd import __version__, settings
from gdevd.__main__ import Refused, build_config, load_settings, parse_args
from tests.daemon.conftest import start_gdevd, stop_gdevd

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UNIT = os.path.join(ROOT, "scripts", "systemd", "gdevd.service")
EXAMPLE = os.path.join(ROOT, "scripts", "systemd", "gdevd.toml")

CONFIG = """
vgpus = 2
memory = "64M"
[daemon]
log_level = "warning"
[proc]
scheduler = "credit"
band_wait_us = 250
[proc.vd0]
compute_bandwidth = 70
[proc.vd1]
compute_bandwidth = 30
memory_share = 60
[dev.gdev1]
mode = 0o640
owner = "gdevtest"
group = 0
"""


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _settings(tmp_path, text: str, *flags: str) -> settings.Settings:  # type: ignore[no-untyped-def]
    cfg = tmp_path / "gdev.toml"
    cfg.write_text(text)
    return load_settings(parse_args(["/nonexistent", "--config", str(cfg), *flags]))


@pytest.mark.mount
def test_config_sets_proc_values_and_device_access(tmp_path, unprivileged) -> None:
    cfg = tmp_path / "gdev.toml"
    cfg.write_text(CONFIG)
    d = start_gdevd("--config", str(cfg))
    try:
        assert _read(d.proc_path("scheduler")) == "band [credit] fifo null\n"
        assert _read(d.proc_path("band_wait_us")) == "250\n"
        assert [_read(d.proc_path(f"vd{i}", "compute_bandwidth")) for i in (0, 1)] == \
            ["70\n", "30\n"]
        assert _read(d.proc_path("vd1", "memory_overcommit")) == "10\n"
        st = os.stat(d.dev(1))
        assert stat.S_IMODE(st.st_mode) == 0o640 and (st.st_uid, st.st_gid) == \
            (unprivileged[0], 0)
        assert stat.S_IMODE(os.stat(d.dev(0)).st_mode) == 0o666
        log = d.log_text()   # log_level warning: the info lines are gone, the warning stays
        assert "serving 2 vGPUs" not in log and "overcommitted by 10%" in log
    finally:
        stop_gdevd(d)


@pytest.mark.mount
def test_chmod_and_chown_survive_a_restart_through_the_state_file(tmp_path,
                                                                   unprivileged) -> None:
    cfg, state = tmp_path / "gdev.toml", tmp_path / "state.toml"
    cfg.write_text("[dev.gdev1]\nmode = 0o640\n")
    d = start_gdevd("--config", str(cfg), "--state", str(state))
    try:
        os.chmod(d.dev(0), 0o600)
        os.chown(d.dev(0), unprivileged[0], -1)
        os.chmod(d.dev(2), 0o660)
    finally:
        stop_gdevd(d)
    assert settings.load_state(str(state)) == {
        0: settings.DeviceAccess(0o600, unprivileged[0], 0),
        2: settings.DeviceAccess(0o660, 0, 0)}
    d = start_gdevd("--config", str(cfg), "--state", str(state))
    try:
        st = os.stat(d.dev(0))
        assert (stat.S_IMODE(st.st_mode), st.st_uid) == (0o600, unprivileged[0])
        assert stat.S_IMODE(os.stat(d.dev(1)).st_mode) == 0o640   # the config's, untouched
        assert stat.S_IMODE(os.stat(d.dev(2)).st_mode) == 0o660
        assert "(state file" in d.log_text()
    finally:
        stop_gdevd(d)
    d = start_gdevd("--config", str(cfg))     # no state file: the config alone, as a node
    try:
        assert stat.S_IMODE(os.stat(d.dev(0)).st_mode) == 0o666
    finally:
        stop_gdevd(d)


def test_a_bad_state_file_is_refused_naming_it(tmp_path) -> None:
    state = tmp_path / "state.toml"
    state.write_text("[dev.gdev0]\nmode = 0o4777\n")
    with pytest.raises(Refused) as info:
        _settings(tmp_path, "", "--state", str(state))
    assert str(state) in str(info.value) and "permission bits" in str(info.value)
    state.write_text("[proc]\nscheduler = 1\n")
    with pytest.raises(Refused, match="only \\[dev.gdevN\\] tables"):
        _settings(tmp_path, "", "--state", str(state))


@pytest.mark.parametrize("text, why", [
    ("[proc]\nscheduler = \"rr\"\n", "proc.scheduler: unknown scheduler 'rr'"),
    ("[proc.vd0]\ncompute_bandwidth = 101\n", "proc.vd0.compute_bandwidth: 101 outside"),
    ("[proc]\nchunk_size = 0\n", "proc.chunk_size: 0 outside [4096, 33554432]"),
    ("[proc]\nchunk_size = 5000\n", "proc.chunk_size: 5000 is not a multiple of 4096"),
    ("[proc]\niowrite_limit = \"big\"\n", "proc.iowrite_limit: not an unsigned integer"),
    ("[proc.vd0]\ncompute_bandwidth = 60\n[proc.vd1]\ncompute_bandwidth = 30\n",
     "gpu0's vGPUs would total 140%"),
    ("[proc]\nmemory_used = 5\n", "proc.memory_used: not a writable /proc/gdev entry"),
    ("[proc.vd9]\nperiod = 5\n", "there are 4 vGPUs"),
    ("[dev.gdev0]\nmode = 0o4777\n", "dev.gdev0.mode: want permission bits"),
    ("[dev.gdev0]\nowner = \"no-such-user-x\"\n", "no such user"),
    ("[dev.tty0]\nmode = 0o600\n", "dev.tty0: want a table named gdevN"),
    ("[daemon]\nlog_level = \"loud\"\n", "daemon.log_level: 'loud' not one of"),
    ("[daemon]\nlogfile = \"x\"\n", "daemon.logfile: unknown key"),
    ("colour = 3\n", "unknown configuration keys: colour"),
])
def test_a_bad_configuration_is_refused_naming_the_key(tmp_path, text: str, why: str) -> None:
    with pytest.raises(Refused) as info:
        build_config(_settings(tmp_path, text))
    assert why in str(info.value)


def test_flags_override_the_file(tmp_path) -> None:
    s = _settings(tmp_path, '[daemon]\nlog_level = "error"\nmodules = ["a:x=1"]\n',
                  "--log-level", "debug", "--module", "b:y=2", "--vgpus", "2")
    assert s.daemon["log_level"] == "debug" and s.daemon["modules"] == ["a:x=1", "b:y=2"]
    assert build_config(s).vgpus == 2


def test_the_example_configuration_and_the_unit_agree_with_the_daemon(tmp_path) -> None:
    build_config(_settings(tmp_path, _read(EXAMPLE)))
    unit = _read(UNIT)
    start = next(line for line in unit.splitlines() if line.startswith("ExecStart="))
    argv = shlex.split(start.removeprefix("ExecStart="))
    args = parse_args(argv[1:])
    assert os.path.basename(argv[0]) == "gdevd" and args.foreground
    assert args.config == "/etc/gdev/gdevd.toml"
    assert "StateDirectory=gdev" in unit   # the example's [daemon] state lives there
    assert _settings(tmp_path, _read(EXAMPLE)).daemon["state"].startswith("/var/lib/gdev/")


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd is not installed")
def test_systemd_accepts_the_unit(tmp_path) -> None:
    unit = tmp_path / "gdevd.service"
    unit.write_text(_read(UNIT).replace("/usr/local/bin/gdevd",
                                       os.path.join(os.path.dirname(sys.executable), "gdevd")))
    r = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and "gdevd.service" not in r.stderr, r.stderr


def test_version() -> None:
    r = subprocess.run([sys.executable, "-m", "gdevd", "--version"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and r.stdout == f"gdevd {__version__}\n"


@pytest.mark.mount
def test_detached_start_prints_its_pid_and_keeps_a_pidfile(tmp_path) -> None:
    base = tempfile.mkdtemp(prefix="gdevd-test-")
    mount, pidfile = os.path.join(base, "mnt"), str(tmp_path / "gdevd.pid")
    os.mkdir(mount)
    try:
        r = subprocess.run([sys.executable, "-m", "gdevd", mount, "--pidfile", pidfile],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        pid = int(_read(pidfile))
        assert r.stdout == f"gdevd: serving {mount} (pid {pid})\n"
        assert os.path.ismount(mount)
        other = os.path.join(base, "other")
        os.mkdir(other)
        again = subprocess.run([sys.executable, "-m", "gdevd", other, "--pidfile", pidfile],
                               capture_output=True, text=True, timeout=60)
        assert again.returncode == 2 and f"already runs as pid {pid}" in again.stderr
        os.kill(pid, 15)
        for _ in range(300):
            if not os.path.exists(pidfile):
                break
            time.sleep(0.05)
        assert not os.path.exists(pidfile) and not os.path.ismount(mount)
    finally:
        subprocess.run(["fusermount3", "-u", "-z", mount], check=False, capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


def test_a_stale_pidfile_is_taken_over(tmp_path) -> None:
    from gdevd.__main__ import claim_pidfile

    pidfile = tmp_path / "gdevd.pid"
    dead = subprocess.Popen(["true"])
    dead.wait()
    pidfile.write_text(f"{dead.pid}\n")
    claim_pidfile(str(pidfile))             # a dead pid: no refusal
    pidfile.write_text(f"{os.getpid()}\n")
    with pytest.raises(Refused):
        claim_pidfile(str(pidfile))


@pytest.mark.mount
def test_a_stale_mount_is_named_with_the_command_that_clears_it() -> None:
    d = start_gdevd()
    try:
        os.stat(d.mount)                  # fresh cached attributes: stat alone would succeed
        d.proc.kill()                     # the daemon dies; the kernel keeps the mount
        d.proc.wait()
        r = subprocess.run([sys.executable, "-m", "gdevd", d.mount], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 2
        assert f"{d.mount} is a stale mount (its daemon died); clear it with: fusermount3 " \
            f"-u -z {d.mount}" in r.stderr
    finally:
        stop_gdevd(d)


@pytest.mark.mount
def test_modules_listed_in_the_config_are_loaded_at_start(tmp_path) -> None:
    lower, passfile = tmp_path / "lower", tmp_path / "pass"
    lower.mkdir()
    passfile.write_text("correct horse battery staple\n")
    cfg = tmp_path / "gdev.toml"
    spec = f"ecryptfs:lower={lower},passphrase_file={passfile},scrypt_log2n=4,cipher=cpu"
    cfg.write_text(f'[daemon]\nmodules = ["{spec}"]\n')
    d = start_gdevd("--config", str(cfg))
    try:
        deadline = time.monotonic() + 30   # modules load once the mount answers
        while not os.path.isdir(os.path.join(d.mount, "ecryptfs")):
            assert d.proc.poll() is None and time.monotonic() < deadline, d.log_text()
            time.sleep(0.02)
        assert _read(d.proc_path("modules")).splitlines()[1].split()[:3] == \
            ["ecryptfs", "ecryptfs", "live"]
    finally:
        stop_gdevd(d)
