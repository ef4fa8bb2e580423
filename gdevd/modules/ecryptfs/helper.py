"""The KGPU comparison path: cipher requests sent to a user-space helper process.

KGPU (Sun et al.) runs the GPU from user space: the kernel queues a request, a helper daemon
picks it up, runs CUDA and answers.  :class:`HelperCipher` is that upcall: it starts
``python -m gdevd.modules.ecryptfs.helper --device N`` with ``GDEV_MOUNT`` set, and sends each
request over a pipe; the helper runs the very same :class:`GpuCipher` over ``libgdev.cuda``
(through the mount's device file and the ioctl socket), so the only difference measured is
the upcall: two more copies of the data through pipes, two process switches, and the libgdev
round trips instead of direct calls into the runtime.

Wire format, little-endian: request ``op u8, pad[7], first u64, nbytes u64`` then the 64-byte
key and the data (op 1 encrypt, 2 decrypt); reply ``status i32, pad[4], nbytes u64`` then the
data (status 0) or a UTF-8 message (status = an errno).  EOF on stdin ends the helper.
"""

from __future__ import annotations

import argparse
import errno
import os
import struct
import subprocess
import sys
import threading
from typing import IO, BinaryIO

from gdevd.errors import GdevError

REQUEST = struct.Struct("<B7xQQ")
REPLY = struct.Struct("<i4xQ")
ENCRYPT, DECRYPT = 1, 2
READY = b"ready\n"


def _read_exact(f: IO[bytes], n: int) -> bytes:
    data = f.read(n)
    if data is None or len(data) != n:
        raise EOFError(f"wanted {n} bytes, got {0 if data is None else len(data)}")
    return data


class HelperCipher:
    """An :class:`~.cipher.ExtentCipher` that forwards to a helper process on vGPU ``device``."""

    name = "helper"

    def __init__(self, mountpoint: str, device: int = 0, timeout: float = 60.0) -> None:
        env = {**os.environ, "GDEV_MOUNT": mountpoint}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gdevd.modules.ecryptfs.helper", "--device", str(device)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd="/")
        self.pid = self.proc.pid
        self._lock = threading.Lock()
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if line != READY:
            self.close()
            raise GdevError(errno.EIO, f"the ecryptfs helper did not start: {line!r}")

    def _call(self, op: int, key: bytes, first: int, data: bytes) -> bytes:
        with self._lock:
            assert self.proc.stdin is not None and self.proc.stdout is not None
            try:
                self.proc.stdin.write(REQUEST.pack(op, first, len(data)) + key + data)
                self.proc.stdin.flush()
                status, n = REPLY.unpack(_read_exact(self.proc.stdout, REPLY.size))
                body = _read_exact(self.proc.stdout, n)
            except (OSError, EOFError, struct.error) as exc:
                raise GdevError(errno.EIO, f"the ecryptfs helper failed: {exc}") from None
        if status:
            raise GdevError(status, body.decode(errors="replace"))
        return body

    def encrypt(self, key: bytes, first: int, data: bytes) -> bytes:
        """See :class:`~.cipher.ExtentCipher`."""
        return self._call(ENCRYPT, key, first, data)

    def decrypt(self, key: bytes, first: int, data: bytes) -> bytes:
        """See :class:`~.cipher.ExtentCipher`."""
        return self._call(DECRYPT, key, first, data)

    def close(self) -> None:
        """End the helper (EOF on its stdin; killed if it does not exit in 10 s)."""
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            if f is not None and not f.closed:
                f.close()


def serve(device: int, stdin: BinaryIO, stdout: BinaryIO) -> None:
    """The helper's loop: a GpuCipher over libgdev.cuda answering requests until EOF."""
    from libgdev import cuda

    from .cipher import GpuCipher

    gpu = GpuCipher(cuda, device)
    try:
        stdout.write(READY)
        stdout.flush()
        while head := stdin.read(REQUEST.size):
            op, first, n = REQUEST.unpack(head)
            key, data = _read_exact(stdin, 64), _read_exact(stdin, n)
            try:
                out = (gpu.encrypt if op == ENCRYPT else gpu.decrypt)(key, first, data)
                stdout.write(REPLY.pack(0, len(out)) + out)
            except Exception as exc:  # noqa: BLE001 - report any failure to the caller
                msg = str(exc).encode()
                stdout.write(REPLY.pack(getattr(exc, "errno", None) or errno.EIO, len(msg)) + msg)
            stdout.flush()
    finally:
        gpu.close()


def main() -> None:
    """``python -m gdevd.modules.ecryptfs.helper --device N`` (GDEV_MOUNT names the mount)."""
    p = argparse.ArgumentParser(description="ecryptfs's KGPU-style user-space cipher helper")
    p.add_argument("--device", type=int, default=0)
    args = p.parse_args()
    serve(args.device, sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    main()
