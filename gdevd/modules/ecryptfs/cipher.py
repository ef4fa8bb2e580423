"""The cipher paths: AES-256-XTS over whole 4 KiB extents, tweak = extent number.

* :class:`CpuCipher`: the ``cryptography`` package (OpenSSL) on the daemon's CPU.
* :class:`GpuCipher`: ``kernels/aes.ptx`` on the emulated GPU through a CUDA driver: ``kcuda``
  in the daemon (the paper's in-kernel path), or ``libgdev.cuda`` in the KGPU-style helper
  process (:mod:`.helper`), which runs the very same class.
* :class:`CipherPaths`: picks a path per request (below ``threshold`` bytes the CPU, at or
  above it the GPU or the helper) and counts what each path did, for ``/proc``.

Every cipher is called from worker threads (never the trio loop: kcuda calls block on it),
possibly several at once; a GpuCipher serializes its users on a lock (one set of buffers).
"""

from __future__ import annotations

import contextlib
import errno
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from gdevd.errors import GdevError

from .extent import EXTENT

AES_PTX = Path(__file__).resolve().parents[3] / "kernels" / "aes.ptx"
BLOCK = 256          # CUDA threads per block (one 16-byte AES block each)
KEY_SLOTS = 16       # expanded key schedules kept on the device (LRU)


def tweaks(first: int, count: int) -> np.ndarray:
    """XTS tweaks of extents ``first .. first+count-1``: 16 bytes each, little-endian."""
    t = np.zeros((count, 2), dtype="<u8")
    t[:, 0] = np.arange(first, first + count, dtype=np.uint64)
    return t.view(np.uint8).reshape(-1)


_ERRNO = {"CUDA_ERROR_OUT_OF_MEMORY": errno.ENOMEM, "CUDA_ERROR_INVALID_DEVICE": errno.ENODEV,
          "CUDA_ERROR_NO_DEVICE": errno.ENODEV, "CUDA_ERROR_NOT_INITIALIZED": errno.ENODEV,
          "CUDA_ERROR_DEVICE_UNAVAILABLE": errno.EBUSY}


@contextlib.contextmanager
def cuda_errors(cuda: Any) -> Iterator[None]:
    """Turn the driver's CudaError into GdevError (the file system speaks errno): a missing
    device ENODEV, no memory ENOMEM, anything else EIO."""
    try:
        yield
    except cuda.CudaError as exc:
        raise GdevError(_ERRNO.get(exc.name, errno.EIO), f"GPU cipher: {exc}") from None


class ExtentCipher(Protocol):
    """What the file layer needs: whole extents in, whole extents out."""

    def encrypt(self, key: bytes, first: int, data: bytes) -> bytes:
        """Encrypt ``data`` (a multiple of 4 KiB) as extents ``first, first+1, ...``."""

    def decrypt(self, key: bytes, first: int, data: bytes) -> bytes:
        """The inverse of :meth:`encrypt`."""

    def close(self) -> None:
        """Release everything the cipher holds (idempotent)."""


class CpuCipher:
    """AES-256-XTS with ``cryptography``; ``key`` is 64 bytes (K1 || K2)."""

    name = "cpu"

    def _run(self, key: bytes, first: int, data: bytes, decrypt: bool) -> bytes:
        out = bytearray()
        tw = tweaks(first, len(data) // EXTENT).tobytes()
        for i in range(len(data) // EXTENT):
            c = Cipher(algorithms.AES(key), modes.XTS(tw[16 * i:16 * i + 16]))
            op = c.decryptor() if decrypt else c.encryptor()
            out += op.update(data[i * EXTENT:(i + 1) * EXTENT]) + op.finalize()
        return bytes(out)

    def encrypt(self, key: bytes, first: int, data: bytes) -> bytes:
        """See :class:`ExtentCipher`."""
        return self._run(key, first, data, False)

    def decrypt(self, key: bytes, first: int, data: bytes) -> bytes:
        """See :class:`ExtentCipher`."""
        return self._run(key, first, data, True)

    def close(self) -> None:
        """Nothing to release."""


class GpuCipher:
    """AES-256-XTS on the (emulated) GPU through the CUDA driver API ``cuda``.

    Creates one context on vGPU ``device`` at construction (``cuda.cuInit`` first), loads
    ``kernels/aes.ptx``, and keeps the expanded schedules of the last KEY_SLOTS keys and one
    growing data buffer on the device.  Must be built and used off the trio loop.
    """

    name = "gpu"

    def __init__(self, cuda: Any, device: int = 0) -> None:
        self.cuda, self.device = cuda, device
        self._lock = threading.Lock()
        self._slots: OrderedDict[bytes, int] = OrderedDict()
        self._buf = self._tw = 0
        self._cap = self._twcap = 0
        self._want_prio: int | None = None
        with cuda_errors(cuda):
            cuda.cuInit(0)
            self.ctx = cuda.cuCtxCreate(0, device)
        try:
            with cuda_errors(cuda):
                mod = cuda.cuModuleLoad(str(AES_PTX))
                self._expand = cuda.cuModuleGetFunction(mod, "aes256_expand_keys")
                self._enc = cuda.cuModuleGetFunction(mod, "aes256_xts_encrypt")
                self._dec = cuda.cuModuleGetFunction(mod, "aes256_xts_decrypt")
                self._keys = cuda.cuMemAlloc(64)
        except BaseException:
            cuda.cuCtxDestroy(self.ctx)
            raise
        cuda.cuCtxPopCurrent()

    @property
    def handle(self) -> Any:
        """The Gdev handle under the context (its ``cid`` and ``prio``)."""
        return self.ctx.handle

    def set_priority(self, prio: int) -> None:
        """Set the context's scheduling priority (Gdev's 0..40, larger first).

        The value reaches the scheduler (``cuCtxSetPriority``) before the next request, or at
        :meth:`apply_priority`: this may be called on the trio loop, where kcuda cannot block.
        """
        self._want_prio = prio

    def apply_priority(self) -> None:
        """Apply a pending :meth:`set_priority` now (off the trio loop)."""
        with self._lock, cuda_errors(self.cuda):
            self._apply_priority()

    def _apply_priority(self) -> None:
        if self._want_prio is not None:
            self.cuda.cuCtxSetPriority(self.ctx, self._want_prio)
            self._want_prio = None

    def priority(self) -> int:
        """The context's effective priority (off the trio loop)."""
        with self._lock, cuda_errors(self.cuda):
            self._apply_priority()
            return int(self.cuda.cuCtxGetPriority(self.ctx))

    def _schedules(self, key: bytes) -> int:
        """Device address of ``key``'s schedules: rk_enc (480 bytes) then rk_dec (480)."""
        if key in self._slots:
            self._slots.move_to_end(key)
            return self._slots[key]
        if len(self._slots) >= KEY_SLOTS:
            _, rk = self._slots.popitem(last=False)
            self.cuda.cuMemFree(rk)
        rk = self.cuda.cuMemAlloc(960)
        self.cuda.cuMemcpyHtoD(self._keys, np.frombuffer(key, np.uint8))
        self.cuda.cuLaunchKernel(self._expand, 1, 1, 1, 32, 1, 1, 0, None,
                                 [self._keys, rk, rk + 480, 2])
        self._slots[key] = rk
        return rk

    def _reserve(self, nbytes: int, nunits: int) -> None:
        if nbytes <= self._cap and nunits * 16 <= self._twcap:
            return
        if self._cap:
            self.cuda.cuMemFree(self._buf)
            self.cuda.cuMemFree(self._tw)
            self._cap = self._twcap = 0
        self._buf = self.cuda.cuMemAlloc(max(nbytes, 16))
        self._tw = self.cuda.cuMemAlloc(max(nunits * 16, nbytes // 16, 16))
        self._cap, self._twcap = max(nbytes, 16), max(nunits * 16, nbytes // 16, 16)

    def xts(self, key: bytes, tweak_bytes: bytes, data: bytes, unit: int,
            decrypt: bool = False) -> bytes:
        """IEEE 1619 XTS of ``data`` in data units of ``unit`` bytes (a multiple of 16, that
        divides ``len(data)``), unit ``i`` with the 16-byte tweak ``tweak_bytes[16i:16i+16]``."""
        n = len(data)
        if len(key) != 64 or unit % 16 or not unit or n % unit \
                or len(tweak_bytes) != n // unit * 16:
            raise ValueError("xts: 64-byte key, whole 16-byte blocks and one tweak per unit")
        if n == 0:
            return b""
        with self._lock, cuda_errors(self.cuda):
            self.cuda.cuCtxPushCurrent(self.ctx)
            try:
                self._apply_priority()
                rk = self._schedules(key)
                self._reserve(n, n // unit)
                self.cuda.cuMemcpyHtoD(self._buf, np.frombuffer(data, np.uint8))
                self.cuda.cuMemcpyHtoD(self._tw, np.frombuffer(tweak_bytes, np.uint8))
                # rk: K1 enc | K2 enc | K1 dec | K2 dec (240 bytes each); the tweak uses K2 enc
                fn, rk1 = (self._dec, rk + 480) if decrypt else (self._enc, rk)
                nb = n // 16
                self.cuda.cuLaunchKernel(fn, -(-nb // BLOCK), 1, 1, BLOCK, 1, 1, 0, None,
                                         [self._buf, self._buf, rk1, rk + 240, self._tw, nb,
                                          unit // 16])
                out = np.empty(n, np.uint8)
                self.cuda.cuMemcpyDtoH(out, self._buf)
                return out.tobytes()
            finally:
                self.cuda.cuCtxPopCurrent()

    def encrypt(self, key: bytes, first: int, data: bytes) -> bytes:
        """See :class:`ExtentCipher`."""
        return self.xts(key, tweaks(first, len(data) // EXTENT).tobytes(), data, EXTENT)

    def decrypt(self, key: bytes, first: int, data: bytes) -> bytes:
        """See :class:`ExtentCipher`."""
        return self.xts(key, tweaks(first, len(data) // EXTENT).tobytes(), data, EXTENT, True)

    def close(self) -> None:
        """Destroy the context: every buffer and schedule with it (idempotent)."""
        with self._lock:
            if self.ctx is not None and not self.ctx.destroyed:
                self.cuda.cuCtxDestroy(self.ctx)
            self._slots.clear()
            self._cap = self._twcap = 0


class CipherPaths:
    """Chooses CPU or ``big`` (GPU or helper) per request and counts what each did.

    ``threshold``: requests of fewer bytes take the CPU; ``big=None`` means CPU always.
    """

    def __init__(self, big: ExtentCipher | None, threshold: int) -> None:
        self.cpu = CpuCipher()
        self.big = big
        self.threshold = threshold
        self.requests: Counter[str] = Counter()
        self.nbytes: Counter[str] = Counter()
        self.last = "none"

    def pick(self, nbytes: int) -> Any:
        """The cipher for a request of ``nbytes``."""
        if self.big is not None and nbytes >= self.threshold:
            return self.big
        return self.cpu

    def _count(self, c: Any, nbytes: int) -> None:
        self.requests[c.name] += 1
        self.nbytes[c.name] += nbytes
        self.last = c.name

    def encrypt(self, key: bytes, first: int, data: bytes) -> bytes:
        """Encrypt on the path chosen for ``len(data)``."""
        c = self.pick(len(data))
        self._count(c, len(data))
        return c.encrypt(key, first, data)

    def decrypt(self, key: bytes, first: int, data: bytes) -> bytes:
        """Decrypt on the path chosen for ``len(data)``."""
        c = self.pick(len(data))
        self._count(c, len(data))
        return c.decrypt(key, first, data)

    def close(self) -> None:
        """Close the big cipher (its context, or the helper process)."""
        if self.big is not None:
            self.big.close()
