"""ecryptfs mounted for real: a hypothesis state machine runs the same random operations on
the plaintext view and on a plain directory; restart, wrong passphrase, the GPU and helper
paths, the control file (load, busy unload, root only) and unload releasing the context."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from tests.daemon.conftest import Gdevd, run_as, start_gdevd, stop_gdevd, unprivileged  # noqa: F401

pytestmark = pytest.mark.mount
PASS = "pass phrase"


@dataclass
class Ecfs:
    """A gdevd with one ecryptfs module: the daemon, its lower directory, the plaintext view."""

    d: Gdevd
    lower: str
    base: str

    @property
    def view(self) -> str:
        return os.path.join(self.d.mount, "ecryptfs")

    def proc(self, name: str) -> str:
        with open(self.d.proc_path("ecryptfs", name)) as f:
            return f.read().strip()

    def set_proc(self, name: str, value: str) -> None:
        with open(self.d.proc_path("ecryptfs", name), "w") as f:
            f.write(value + "\n")


def _start(lower: str, passfile: str, extra: str = "") -> Gdevd:
    spec = f"ecryptfs:lower={lower},passphrase_file={passfile},scrypt_log2n=4{extra}"
    d = start_gdevd("--module", spec)
    deadline = time.monotonic() + 30  # the module loads once the mount answers
    while not os.path.isdir(os.path.join(d.mount, "ecryptfs")):
        if d.proc.poll() is not None or time.monotonic() > deadline:
            stop_gdevd(d)
            raise RuntimeError(f"the ecryptfs module did not load:\n{d.log_text()}")
        time.sleep(0.02)
    return d


@pytest.fixture(scope="module")
def ecfs() -> Iterator[Ecfs]:
    base = tempfile.mkdtemp(prefix="ecfs-test-")
    lower = os.path.join(base, "lower")
    os.mkdir(lower)
    passfile = os.path.join(base, "pass")
    with open(passfile, "w") as f:
        f.write(PASS + "\n")
    d = _start(lower, passfile, ",threshold=1073741824")  # the CPU unless a test lowers it
    try:
        yield Ecfs(d, lower, base)
        assert "Traceback" not in d.log_text(), d.log_text()
    finally:
        stop_gdevd(d)
        shutil.rmtree(base, ignore_errors=True)


def _outcome(fn, *args):  # type: ignore[no-untyped-def]
    try:
        return ("ok", fn(*args))
    except OSError as exc:
        return ("err", exc.errno)


def _write(path: str, off: int, data: bytes, append: bool = False) -> int:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else 0), 0o644)
    try:
        return os.pwrite(fd, data, off) if not append else os.write(fd, data)
    finally:
        os.close(fd)


def _read(path: str, off: int, size: int) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.pread(fd, size, off)
    finally:
        os.close(fd)


def _tree(root: str) -> list[tuple[str, bool, int]]:
    out = []
    for dirpath, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(dirpath, n)
            out.append((os.path.relpath(p, root), os.path.isdir(p),
                        0 if os.path.isdir(p) else os.path.getsize(p)))
    return sorted(out)


NAMES = st.sampled_from(["a", "b", "d1/a", "d1/c", "d2/b", "d1/d3/e"])
DIRS = st.sampled_from(["d1", "d2", "d1/d3"])


class FsModel(RuleBasedStateMachine):
    """Each operation runs on the mounted view and on a plain directory; outcomes must match."""

    ecfs: Ecfs

    def __init__(self) -> None:
        super().__init__()
        self.roots = [tempfile.mkdtemp(dir=self.ecfs.view),
                      tempfile.mkdtemp(dir=self.ecfs.base)]

    def _both(self, fn, paths: tuple[str, ...], *args):  # type: ignore[no-untyped-def]
        results = [_outcome(fn, *[os.path.join(r, p) for p in paths], *args) for r in self.roots]
        assert results[0] == results[1], (fn.__name__, paths, args, results)

    @rule(name=NAMES, off=st.integers(0, 9000), data=st.binary(max_size=6000))
    def write(self, name: str, off: int, data: bytes) -> None:
        self._both(_write, (name,), off, data)

    @rule(name=NAMES, data=st.binary(min_size=1, max_size=5000))
    def append(self, name: str, data: bytes) -> None:
        self._both(_write, (name,), 0, data, True)

    @rule(name=NAMES, off=st.integers(0, 16000), size=st.integers(0, 9000))
    def read(self, name: str, off: int, size: int) -> None:
        self._both(_read, (name,), off, size)

    @rule(name=NAMES, size=st.integers(0, 12000))
    def truncate(self, name: str, size: int) -> None:
        self._both(os.truncate, (name,), size)

    @rule(src=NAMES | DIRS, dst=NAMES | DIRS)
    def rename(self, src: str, dst: str) -> None:
        self._both(os.rename, (src, dst))

    @rule(name=NAMES)
    def unlink(self, name: str) -> None:
        self._both(os.unlink, (name,))

    @rule(name=DIRS)
    def mkdir(self, name: str) -> None:
        self._both(os.mkdir, (name,))

    @rule(name=DIRS)
    def rmdir(self, name: str) -> None:
        self._both(os.rmdir, (name,))

    @invariant()
    def same_tree(self) -> None:
        assert _tree(self.roots[0]) == _tree(self.roots[1])

    def teardown(self) -> None:
        for r in self.roots:
            shutil.rmtree(r)


def test_random_operations_match_a_plain_directory(ecfs: Ecfs) -> None:
    FsModel.ecfs = ecfs
    run = FsModel.TestCase
    run.settings = settings(max_examples=25, stateful_step_count=15, deadline=None,
                            suppress_health_check=list(HealthCheck))
    run().runTest()


def test_plaintext_sizes_and_ciphertext_below(ecfs: Ecfs) -> None:
    path = os.path.join(ecfs.view, "sizes")
    data = b"attack at dawn " * 1000
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    assert os.stat(path).st_size == len(data)
    lower = os.path.join(ecfs.lower, "sizes")
    assert os.stat(lower).st_size > len(data)
    assert b"attack at dawn" not in open(lower, "rb").read()
    fd = os.open(path, os.O_RDWR)
    try:  # an open file outlives its name
        os.unlink(path)
        assert os.fstat(fd).st_size == len(data)
        os.pwrite(fd, b"!", len(data))
        assert os.pread(fd, 20, len(data) - 4) == b"awn !"
    finally:
        os.close(fd)
    _write(path, 0, data)
    assert ".gdev-ecryptfs" not in os.listdir(ecfs.view)
    with pytest.raises(FileNotFoundError):
        os.stat(os.path.join(ecfs.view, ".gdev-ecryptfs"))
    os.unlink(path)


def test_gpu_path_below_the_threshold_setting(ecfs: Ecfs) -> None:
    assert ecfs.proc("cipher") == "gpu"
    before = int(ecfs.proc("requests_gpu"))
    ecfs.set_proc("cpu_threshold", "8192")
    try:
        data = os.urandom(40000)
        path = os.path.join(ecfs.view, "gpu")
        _write(path, 0, data)
        assert ecfs.proc("last_path") == "gpu"
        assert _read(path, 0, 1 << 20) == data
        assert int(ecfs.proc("requests_gpu")) >= before + 2
        _read(path, 5, 10)  # one extent: below the threshold
        assert ecfs.proc("last_path") == "cpu"
    finally:
        ecfs.set_proc("cpu_threshold", "1073741824")
    with pytest.raises(OSError) as e:
        ecfs.set_proc("cpu_threshold", "lots")
    assert e.value.errno == errno.EINVAL
    with pytest.raises(OSError):
        ecfs.set_proc("priority", "41")
    ecfs.set_proc("priority", "12")
    assert ecfs.proc("priority") == "12"
    with open(ecfs.d.proc_path("modules")) as f:
        assert "prio=12" in f.read()
    ecfs.set_proc("priority", "40")


def test_tampering_below_is_eio(ecfs: Ecfs) -> None:
    path = os.path.join(ecfs.view, "tamper")
    _write(path, 0, os.urandom(10000))
    with open(os.path.join(ecfs.lower, "tamper"), "r+b") as f:
        f.seek(4096 + 4096 + 32 + 7)
        f.write(b"\x00\x01")
    assert len(_read(path, 0, 4096)) == 4096
    with pytest.raises(OSError) as e:
        _read(path, 0, 10000)
    assert e.value.errno == errno.EIO
    os.truncate(os.path.join(ecfs.lower, "tamper"), 5000)
    with pytest.raises(OSError) as e:
        _read(path, 0, 10000)
    assert e.value.errno == errno.EIO
    os.unlink(path)


def _modules(mount: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gdevd.modules", mount, *args],
                          capture_output=True, text=True, timeout=120)


def test_control_file_busy_helper_and_release(ecfs: Ecfs, tmp_path) -> None:
    mount = ecfs.d.mount
    lower2 = str(tmp_path)
    spec = (f"ecryptfs:lower={lower2},passphrase=x,scrypt_log2n=4,name=vault,cipher=helper,"
            "threshold=0")
    used0 = int(open(ecfs.d.proc_path("vd0", "memory_used")).read())
    r = _modules(mount, "load", spec)
    assert r.returncode == 0, r.stderr
    assert "vault ecryptfs live 0 helper,pid=" in r.stdout
    data = os.urandom(9000)
    _write(os.path.join(mount, "vault", "f"), 0, data)
    assert _read(os.path.join(mount, "vault", "f"), 0, 9000) == data
    assert int(open(ecfs.d.proc_path("vault", "requests_helper")).read()) >= 2
    fd = os.open(os.path.join(mount, "vault", "f"), os.O_RDONLY)
    try:
        r = _modules(mount, "unload", "vault")
        assert r.returncode == 1 and "busy" in r.stderr and "in use (1 open files)" in r.stderr
    finally:
        os.close(fd)
    r = _modules(mount, "unload", "vault")
    assert r.returncode == 0, r.stderr
    assert "vault" not in r.stdout and not os.path.exists(os.path.join(mount, "vault"))
    assert int(open(ecfs.d.proc_path("vd0", "memory_used")).read()) == used0


def test_unprivileged_users_cannot_load(ecfs: Ecfs, unprivileged) -> None:  # noqa: F811
    code = (f"fd = os.open({ecfs.d.proc_path('modules')!r}, os.O_WRONLY)\n")
    r = run_as(unprivileged, code, ecfs.d.env())
    assert r.returncode != 0 and "PermissionError" in r.stderr
    r = run_as(unprivileged, f"print(open({ecfs.d.proc_path('modules')!r}).read())", ecfs.d.env())
    assert r.returncode == 0 and "ecryptfs ecryptfs live" in r.stdout


def test_restart_reads_back_and_wrong_passphrase_is_refused(tmp_path) -> None:
    lower, passfile = tmp_path / "lower", tmp_path / "pass"
    lower.mkdir()
    passfile.write_text("hunter2\n")
    files = {"x": os.urandom(12345), "sub/y": b"hello\n"}
    d = _start(str(lower), str(passfile), ",cipher=cpu")
    try:
        view = os.path.join(d.mount, "ecryptfs")
        os.mkdir(os.path.join(view, "sub"))
        for name, data in files.items():
            _write(os.path.join(view, name), 0, data)
        with open(d.proc_path("vd0", "memory_used")) as f:
            assert f.read() == "0\n"  # cipher=cpu holds no GPU context
    finally:
        assert stop_gdevd(d) == 0
    d = _start(str(lower), str(passfile))
    try:
        for name, data in files.items():
            assert _read(os.path.join(d.mount, "ecryptfs", name), 0, 1 << 20) == data
    finally:
        stop_gdevd(d)
    passfile.write_text("hunter3\n")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = subprocess.run([sys.executable, "-m", "gdevd", str(mnt), "--foreground", "--module",
                        f"ecryptfs:lower={lower},passphrase_file={passfile}"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "module ecryptfs:" in r.stderr and "wrong passphrase for" in r.stderr
    assert not os.path.ismount(mnt)
