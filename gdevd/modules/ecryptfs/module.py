"""The ecryptfs module: options, start (mount key, cipher path), stop, and its /proc values.

Options (``ecryptfs:key=value,...``):

=================  ==========================================================================
``lower``          the directory holding the ciphertext (required)
``passphrase``     the passphrase, or ``passphrase_file`` = a file whose first line it is
``name``           the subtree's name in the mount and in /proc/gdev (default ``ecryptfs``)
``cipher``         ``gpu`` (kcuda, in the daemon; default), ``helper`` (KGPU-style user-space
                   helper over libgdev) or ``cpu`` (``cryptography`` only)
``threshold``      requests below this many bytes take the CPU (default 8192; KGPU's 8 KiB)
``priority``       the GPU context's priority, 0..40, larger first (default 40, the highest)
``vgpu``           the vGPU the context opens (default 0)
``scrypt_log2n``   scrypt cost of a *new* mount record (default 14, at most 17: scrypt's
                   memory 128·r·2^n must fit the 256 MiB the key derivation allows)
=================  ==========================================================================

The options are checked without I/O when the spec is read; everything that touches a file
(the lower directory, the passphrase file, the mount record) runs in :meth:`prepare`, in a
worker thread under a time limit (:data:`PREPARE_TIMEOUT`), never on the event loop: a
passphrase file must be a regular file of at most :data:`PASSPHRASE_MAX` bytes (a FIFO or a
device is refused without being read), and the lower directory may neither be inside the
daemon's mount nor contain it (the daemon would wait on itself).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from typing import Any

import trio

import kcuda
from gdevd.errors import GdevError

from .cipher import CipherPaths, GpuCipher
from .fs import EcryptfsFs
from .keys import MAX_LOG2N, MountKey, open_mount_key
from .lower import LowerDir
from .proc import ENTRIES, PRIO_RANGE, THRESHOLD_RANGE

CIPHERS = ("gpu", "helper", "cpu")
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")  # a file name in the mount and /proc
PASSPHRASE_MAX = 4096
PREPARE_TIMEOUT = 10.0  # seconds for the lower directory and passphrase file checks
_KNOWN = {"lower", "passphrase", "passphrase_file", "name", "cipher", "threshold", "priority",
          "vgpu", "scrypt_log2n"}


def _int(options: dict[str, str], key: str, default: int, lo: int, hi: int) -> int:
    text = options.get(key, str(default))
    if not text.isdigit() or not lo <= int(text) <= hi:
        raise GdevError(errno.EINVAL, f"ecryptfs: {key}={text!r} is not an integer in [{lo}, {hi}]")
    return int(text)


def read_passphrase_file(path: str) -> bytes:
    """The first line of ``path``, which must be a regular file of at most PASSPHRASE_MAX
    bytes (opened without blocking, so a FIFO is refused, not waited on); EINVAL if not."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise GdevError(errno.EINVAL, f"ecryptfs: passphrase_file: {exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > PASSPHRASE_MAX:
            raise GdevError(errno.EINVAL, f"ecryptfs: passphrase_file {path} is not a regular "
                                          f"file of at most {PASSPHRASE_MAX} bytes")
        data = os.pread(fd, PASSPHRASE_MAX, 0)
    finally:
        os.close(fd)
    return data.split(b"\n", 1)[0].rstrip(b"\r")


def check_lower(lower: str, mountpoint: str | None) -> None:
    """EINVAL unless ``lower`` is a directory apart from the daemon's mount (neither inside
    it nor containing it).  Blocking: call it from a worker thread."""
    if not os.path.isdir(lower):
        raise GdevError(errno.EINVAL, f"ecryptfs: lower={lower!r} is not a directory")
    if mountpoint is None:
        return
    real, mnt = os.path.realpath(lower), os.path.realpath(mountpoint)
    if os.path.commonpath([real, mnt]) in (real, mnt):
        raise GdevError(errno.EINVAL, f"ecryptfs: lower={lower!r} overlaps the mount {mnt}")


class EcryptfsModule:
    """One ecryptfs instance (see the module docstring for its options)."""

    kind = "ecryptfs"
    proc_entries = ENTRIES    # its /proc/gdev/NAME files

    def __init__(self, options: dict[str, str], mountpoint: str | None = None) -> None:
        if unknown := set(options) - _KNOWN:
            raise GdevError(errno.EINVAL, f"ecryptfs: unknown options {', '.join(sorted(unknown))}")
        if not options.get("lower"):
            raise GdevError(errno.EINVAL, "ecryptfs: lower= is required")
        self.lower = os.path.abspath(options["lower"])
        self.name = options.get("name", "ecryptfs")
        if not NAME_RE.fullmatch(self.name):
            raise GdevError(errno.EINVAL, f"ecryptfs: name={self.name[:80]!r} is not 1-64 "
                                          "letters, digits, '_', '.', '-' (no leading dot)")
        self.cipher = options.get("cipher", "gpu")
        if self.cipher not in CIPHERS:
            raise GdevError(errno.EINVAL, f"ecryptfs: cipher must be one of {', '.join(CIPHERS)}")
        self.threshold = _int(options, "threshold", 8192, *THRESHOLD_RANGE)
        self._priority = _int(options, "priority", PRIO_RANGE[1], *PRIO_RANGE)
        self.vgpu = _int(options, "vgpu", 0, 0, 1 << 16)
        self.log2n = _int(options, "scrypt_log2n", 14, 1, MAX_LOG2N)
        if ("passphrase" in options) == ("passphrase_file" in options):
            raise GdevError(errno.EINVAL, "ecryptfs: one of passphrase= or passphrase_file= "
                                          "is required")
        self.passphrase_file = options.get("passphrase_file")
        self.passphrase = options.get("passphrase", "").encode()
        self.mountpoint = mountpoint
        self.lowerdir: LowerDir | None = None
        self.state = "new"
        self.mk: MountKey | None = None
        self.paths: CipherPaths | None = None
        self.fs: EcryptfsFs | None = None

    # -- life cycle ------------------------------------------------------------------
    def prepare(self) -> MountKey:
        """The blocking checks (see the module docstring): the lower directory, the
        passphrase file, the passphrase against the mount record (EKEYREJECTED if wrong).
        Returns the mount key; also the one check the command line runs before mounting."""
        check_lower(self.lower, self.mountpoint)
        if self.passphrase_file is not None:
            self.passphrase = read_passphrase_file(self.passphrase_file)
        return open_mount_key(self.lower, self.passphrase, self.log2n)

    def check(self) -> None:
        """:meth:`prepare`, for a spec checked before the daemon mounts."""
        self.prepare()

    async def start(self) -> None:
        """:meth:`prepare` in a worker thread (ETIMEDOUT past PREPARE_TIMEOUT, the thread
        abandoned), then open the lower root descriptor and the cipher path."""
        with trio.move_on_after(PREPARE_TIMEOUT) as scope:
            self.mk = await trio.to_thread.run_sync(self.prepare, abandon_on_cancel=True)
        if scope.cancelled_caught:
            raise GdevError(errno.ETIMEDOUT, f"ecryptfs: lower={self.lower} or its passphrase "
                                             f"file did not answer in {PREPARE_TIMEOUT:g} s")
        self.lowerdir = await trio.to_thread.run_sync(LowerDir, self.lower)
        try:
            big = await trio.to_thread.run_sync(self._open_big)
        except BaseException:
            self.lowerdir.close()
            raise
        self.paths = CipherPaths(big, self.threshold)

    def _open_big(self) -> Any:
        if self.cipher == "gpu":
            gpu = GpuCipher(kcuda, self.vgpu)
            try:
                gpu.set_priority(self._priority)
                gpu.apply_priority()
            except BaseException:
                gpu.close()
                raise
            return gpu
        if self.cipher == "helper":
            from .helper import HelperCipher

            if self.mountpoint is None:
                raise GdevError(errno.EINVAL, "ecryptfs: cipher=helper needs a mounted gdevd")
            return HelperCipher(self.mountpoint, self.vgpu)
        return None

    def make_fs(self, root_inode: int, inode_base: int) -> EcryptfsFs:
        """The plaintext subtree, rooted at ``root_inode`` (called by the FUSE front)."""
        assert self.mk is not None and self.paths is not None, "start() first"
        assert self.lowerdir is not None
        self.fs = EcryptfsFs(self.lowerdir, self.mk, self.paths, root_inode, inode_base)
        return self.fs

    async def stop(self) -> None:
        """Close the lower files and the cipher path: its context and every buffer."""
        if self.fs is not None:
            self.fs.close()
        if self.lowerdir is not None:
            self.lowerdir.close()
        if self.paths is not None:
            await trio.to_thread.run_sync(self.paths.close)
        self.state = "stopped"

    # -- what the registry and /proc show ------------------------------------------------
    def busy(self) -> int:
        """Open files."""
        return self.fs.busy() if self.fs is not None else 0

    def contexts(self) -> list[str]:
        """``cid=N@vdM prio=P`` for the kcuda context, ``helper pid=N`` for the helper."""
        big = self.paths.big if self.paths is not None else None
        if isinstance(big, GpuCipher) and not big.ctx.destroyed:
            return [f"cid={big.handle.cid}@vd{self.vgpu},prio={self._priority}"]
        if big is not None and hasattr(big, "pid"):
            return [f"helper,pid={big.pid}@vd{self.vgpu}"]
        return []

    def shown_options(self) -> str:
        """Options without the passphrase."""
        return (f"lower={self.lower},cipher={self.cipher},threshold={self.threshold},"
                f"priority={self._priority},vgpu={self.vgpu}")

    @property
    def priority(self) -> int:
        """The GPU context's priority (0..40)."""
        return self._priority

    @priority.setter
    def priority(self, value: int) -> None:
        self._priority = value
        big = self.paths.big if self.paths is not None else None
        if isinstance(big, GpuCipher):
            big.set_priority(value)

    def set_threshold(self, value: int) -> None:
        """Requests below ``value`` bytes take the CPU from now on."""
        self.threshold = value
        if self.paths is not None:
            self.paths.threshold = value

    def stat(self, what: str, path: str) -> int:
        """Requests (``what="requests"``) or bytes (``"bytes"``) done on ``path``."""
        if self.paths is None:
            return 0
        counter = self.paths.requests if what == "requests" else self.paths.nbytes
        return counter[path]

    @property
    def last_path(self) -> str:
        """The path the last request took: cpu, gpu, helper or none."""
        return self.paths.last if self.paths is not None else "none"
