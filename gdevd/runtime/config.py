"""The system's configuration: one validated record built from :mod:`.defaults`.

``GdevConfig()`` is the default machine (one GPU, 1 GiB, four vGPUs with equal shares).
Every field is checked by :meth:`GdevConfig.validate`, which raises ``GdevError(EINVAL)``
naming the field, so a bad command line or config file never half-builds a system.
"""

from __future__ import annotations

import dataclasses
import errno
import re

from ..errors import GdevError
from . import defaults as D

_SIZE_RE = re.compile(r"^\s*(\d+)\s*([KMGT]?)(i?B?)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "K": D.KiB, "M": D.MiB, "G": D.GiB, "T": D.GiB * 1024}


def parse_size(text: str | int) -> int:
    """Parse ``"1G"``, ``"512MiB"``, ``"4096"`` (binary units) into bytes.

    Raises ``GdevError(EINVAL)`` for anything else.
    """
    if isinstance(text, int):
        return text
    m = _SIZE_RE.match(text)
    if not m:
        raise GdevError(errno.EINVAL, f"not a size: {text!r}")
    return int(m.group(1)) * _UNITS[m.group(2).upper()]


@dataclasses.dataclass
class GdevConfig:
    """The shape of the emulated machine and the runtime's initial tunables."""

    gpus: int = D.GPUS
    memory: int = D.MEMORY                # bytes of device memory per physical GPU
    dma_memory: int = D.DMA_MEMORY        # bytes of pinned host memory per physical GPU
    vgpus: int = D.VGPUS                  # virtual GPUs per physical GPU, equal shares
    mp_count: int = D.MP_COUNT
    name: str = D.NAME
    period_us: int = D.PERIOD_US
    chunk_size: int = D.CHUNK_SIZE
    pipeline_count: int = D.PIPELINE_COUNT
    iowrite_limit: int = D.IOWRITE_LIMIT  # HtoD copies up to this size take the direct path
    ioread_limit: int = D.IOREAD_LIMIT    # DtoH copies up to this size take the direct path
    compute_slice: int = D.COMPUTE_SLICE
    watchdog: float | None = D.WATCHDOG_S
    contexts_max: int = D.CONTEXTS_MAX
    swap_percent: int = D.SWAP_PERCENT   # temporal device swap area, percent of memory
    host_swap: int = D.HOST_SWAP          # bytes of host swap per physical GPU
    ioctl_poll_us: int = D.IOCTL_POLL_US  # busy-poll window of ioctl connections (live)
    preauth_max: int = D.PREAUTH_MAX          # ioctl connections before HELLO, all users
    preauth_per_uid: int = D.PREAUTH_PER_UID  # ... per user
    preauth_timeout_s: float = D.PREAUTH_TIMEOUT_S
    contexts_per_user: int = D.CONTEXTS_PER_USER  # per non-root user and physical GPU
    contexts_reserved: int = D.CONTEXTS_RESERVED  # for root and modules (<= contexts_max/2)
    pinned_per_session: int = D.PINNED_PER_SESSION  # pinned bytes per context
    launches_queued_max: int = D.LAUNCHES_QUEUED_MAX  # launches in flight per context
    shm_per_user: int = D.SHM_PER_USER        # shm segments per non-root user

    def validate(self) -> GdevConfig:
        """Check every field; return self, or raise ``GdevError(EINVAL)`` naming the field."""
        _int_in("gpus", self.gpus, 1, D.GPUS_MAX)
        _int_in("vgpus", self.vgpus, 1, D.VGPUS_MAX)
        _int_in("memory", self.memory, D.PAGE_SIZE, 1 << 40)
        _int_in("dma_memory", self.dma_memory, 0, 1 << 40)
        _int_in("mp_count", self.mp_count, 1, 1024)
        _int_in("period_us", self.period_us, *D.BOUNDS["period"])
        _check_chunk(self.chunk_size)
        _check_pipeline(self.pipeline_count)
        _int_in("iowrite_limit", self.iowrite_limit, *D.BOUNDS["iowrite_limit"])
        _int_in("ioread_limit", self.ioread_limit, *D.BOUNDS["ioread_limit"])
        _int_in("compute_slice", self.compute_slice, 1, 1 << 40)
        _int_in("contexts_max", self.contexts_max, 1, 1 << 20)
        _int_in("swap_percent", self.swap_percent, *D.BOUNDS["swap_percent"])
        _int_in("host_swap", self.host_swap, 0, 1 << 44)
        _int_in("ioctl_poll_us", self.ioctl_poll_us, *D.BOUNDS["ioctl_poll_us"])
        self._validate_limits()
        if self.memory % D.PAGE_SIZE or self.dma_memory % D.PAGE_SIZE:
            raise GdevError(errno.EINVAL, "memory sizes must be multiples of the page size")
        if self.watchdog is not None and not self.watchdog > 0:
            raise GdevError(errno.EINVAL, f"watchdog must be > 0 seconds: {self.watchdog!r}")
        if not isinstance(self.name, str) or not self.name:
            raise GdevError(errno.EINVAL, "name must be a non-empty string")
        return self

    def _validate_limits(self) -> None:
        _int_in("preauth_max", self.preauth_max, 1, 1 << 20)
        _int_in("preauth_per_uid", self.preauth_per_uid, 1, self.preauth_max)
        _int_in("contexts_reserved", self.contexts_reserved, 0, 1 << 20)
        _int_in("contexts_per_user", self.contexts_per_user, 1, 1 << 20)
        _int_in("pinned_per_session", self.pinned_per_session, D.PAGE_SIZE, 1 << 40)
        _int_in("launches_queued_max", self.launches_queued_max, 1, 1 << 20)
        _int_in("shm_per_user", self.shm_per_user, 1, D.SHM_SEGMENTS)
        t = self.preauth_timeout_s
        if isinstance(t, bool) or not isinstance(t, int | float) or not 0 < t <= 3600:
            raise GdevError(errno.EINVAL, f"preauth_timeout_s must be in (0, 3600]: {t!r}")


def _int_in(field: str, value: object, lo: int, hi: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise GdevError(errno.EINVAL, f"{field} must be an integer in [{lo}, {hi}]: {value!r}")


def _check_chunk(value: object) -> None:
    """gtune's CHUNK_SIZE rule: 4 KiB..32 MiB, a page multiple."""
    _int_in("chunk_size", value, *D.BOUNDS["chunk_size"])
    assert isinstance(value, int)
    if value % D.PAGE_SIZE:
        raise GdevError(errno.EINVAL, f"chunk_size must be a multiple of 4 KiB: {value}")


def _check_pipeline(value: object) -> None:
    """gtune's PIPELINE_COUNT rule: 1..4."""
    _int_in("pipeline_count", value, *D.BOUNDS["pipeline_count"])


check_chunk_size = _check_chunk
check_pipeline_count = _check_pipeline
