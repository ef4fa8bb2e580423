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
``scrypt_log2n``   scrypt cost of a *new* mount record (default 14)
=================  ==========================================================================
"""

from __future__ import annotations

import errno
import os
from typing import Any

import trio

import kcuda
from gdevd.errors import GdevError

from .cipher import CipherPaths, GpuCipher
from .fs import EcryptfsFs
from .keys import MountKey, open_mount_key

CIPHERS = ("gpu", "helper", "cpu")
PRIO_RANGE = (0, 40)
THRESHOLD_RANGE = (0, 1 << 30)
_KNOWN = {"lower", "passphrase", "passphrase_file", "name", "cipher", "threshold", "priority",
          "vgpu", "scrypt_log2n"}


def _int(options: dict[str, str], key: str, default: int, lo: int, hi: int) -> int:
    text = options.get(key, str(default))
    if not text.isdigit() or not lo <= int(text) <= hi:
        raise GdevError(errno.EINVAL, f"ecryptfs: {key}={text!r} is not an integer in [{lo}, {hi}]")
    return int(text)


def _passphrase(options: dict[str, str]) -> bytes:
    if "passphrase" in options:
        return options["passphrase"].encode()
    if "passphrase_file" in options:
        try:
            with open(options["passphrase_file"], "rb") as f:
                return f.readline().rstrip(b"\r\n")
        except OSError as exc:
            raise GdevError(errno.EINVAL, f"ecryptfs: passphrase_file: {exc}") from None
    raise GdevError(errno.EINVAL, "ecryptfs: passphrase= or passphrase_file= is required")


class EcryptfsModule:
    """One ecryptfs instance (see the module docstring for its options)."""

    kind = "ecryptfs"

    def __init__(self, options: dict[str, str], mountpoint: str | None = None) -> None:
        if unknown := set(options) - _KNOWN:
            raise GdevError(errno.EINVAL, f"ecryptfs: unknown options {', '.join(sorted(unknown))}")
        self.lower = os.path.abspath(options.get("lower", ""))
        if "lower" not in options or not os.path.isdir(self.lower):
            raise GdevError(errno.EINVAL, f"ecryptfs: lower={options.get('lower')!r} is not a "
                                          "directory")
        self.name = options.get("name", "ecryptfs")
        if not self.name or "/" in self.name or self.name.startswith("."):
            raise GdevError(errno.EINVAL, f"ecryptfs: bad name {self.name!r}")
        self.cipher = options.get("cipher", "gpu")
        if self.cipher not in CIPHERS:
            raise GdevError(errno.EINVAL, f"ecryptfs: cipher must be one of {', '.join(CIPHERS)}")
        self.threshold = _int(options, "threshold", 8192, *THRESHOLD_RANGE)
        self._priority = _int(options, "priority", PRIO_RANGE[1], *PRIO_RANGE)
        self.vgpu = _int(options, "vgpu", 0, 0, 1 << 16)
        self.log2n = _int(options, "scrypt_log2n", 14, 1, 20)
        self.passphrase = _passphrase(options)
        self.mountpoint = mountpoint
        self.state = "new"
        self.mk: MountKey | None = None
        self.paths: CipherPaths | None = None
        self.fs: EcryptfsFs | None = None

    # -- life cycle ------------------------------------------------------------------
    def check(self) -> None:
        """Verify the passphrase against the lower directory (EKEYREJECTED if wrong)."""
        open_mount_key(self.lower, self.passphrase, self.log2n)

    async def start(self) -> None:
        """Check the passphrase (EKEYREJECTED if wrong) and open the cipher path."""
        self.mk = await trio.to_thread.run_sync(open_mount_key, self.lower, self.passphrase,
                                                self.log2n)
        big = await trio.to_thread.run_sync(self._open_big)
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
        self.fs = EcryptfsFs(self.lower, self.mk, self.paths, root_inode, inode_base)
        return self.fs

    async def stop(self) -> None:
        """Close the lower files and the cipher path: its context and every buffer."""
        if self.fs is not None:
            self.fs.close()
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
