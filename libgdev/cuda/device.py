"""Initialization, driver version and devices (CUdevice = the vGPU minor, as in Gdev).

Device properties come from the Gdev handle: ``cuDevice*`` opens a short-lived handle on the
vGPU the first time a device is asked about and reads it with ``gquery`` (memory share,
multiprocessor count, chipset, PCI ids, compute capability, as Gdev's ``cuDeviceGet*`` do);
the answers are cached.  Architectural limits are those of compute capability 7.5, which the
emulated GPU and its PTX engine implement.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from ..constants import (
    GDEV_NVIDIA_QUERY_MP_COUNT,
    GDEV_QUERY_CHIPSET,
    GDEV_QUERY_COMPUTE_CAPABILITY,
    GDEV_QUERY_DEVICE_MEM_SIZE,
    GDEV_QUERY_PCI_DEVICE,
    GDEV_QUERY_PCI_VENDOR,
)
from .core import DriverCore
from .errors import CUresult, api, fail

GDEV_CUDA_VERSION = 4000  # cuDriverGetVersion, as Gdev reports



class CUdevice_attribute(enum.IntEnum):
    """Device attributes with CUDA's numeric values (the subset this device reports)."""

    MAX_THREADS_PER_BLOCK = 1
    MAX_BLOCK_DIM_X = 2
    MAX_BLOCK_DIM_Y = 3
    MAX_BLOCK_DIM_Z = 4
    MAX_GRID_DIM_X = 5
    MAX_GRID_DIM_Y = 6
    MAX_GRID_DIM_Z = 7
    MAX_SHARED_MEMORY_PER_BLOCK = 8
    TOTAL_CONSTANT_MEMORY = 9
    WARP_SIZE = 10
    MAX_PITCH = 11
    MAX_REGISTERS_PER_BLOCK = 12
    CLOCK_RATE = 13
    TEXTURE_ALIGNMENT = 14
    GPU_OVERLAP = 15
    MULTIPROCESSOR_COUNT = 16
    KERNEL_EXEC_TIMEOUT = 17
    INTEGRATED = 18
    CAN_MAP_HOST_MEMORY = 19
    COMPUTE_MODE = 20
    CONCURRENT_KERNELS = 31
    ECC_ENABLED = 32
    PCI_BUS_ID = 33
    PCI_DEVICE_ID = 34
    TCC_DRIVER = 35
    MEMORY_CLOCK_RATE = 36
    GLOBAL_MEMORY_BUS_WIDTH = 37
    L2_CACHE_SIZE = 38
    MAX_THREADS_PER_MULTIPROCESSOR = 39
    ASYNC_ENGINE_COUNT = 40
    UNIFIED_ADDRESSING = 41
    PCI_DOMAIN_ID = 50
    COMPUTE_CAPABILITY_MAJOR = 75
    COMPUTE_CAPABILITY_MINOR = 76
    MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81
    MAX_REGISTERS_PER_MULTIPROCESSOR = 82
    MANAGED_MEMORY = 83
    COOPERATIVE_LAUNCH = 95
    MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97


A = CUdevice_attribute
# Limits of compute capability 7.5 as the PTX engine enforces them; the engine allows 64 KiB
# of shared memory per block (static + dynamic), the opt-in maximum.
_STATIC_ATTRIBUTES: dict[int, int] = {
    A.MAX_THREADS_PER_BLOCK: 1024, A.MAX_BLOCK_DIM_X: 1024, A.MAX_BLOCK_DIM_Y: 1024,
    A.MAX_BLOCK_DIM_Z: 64, A.MAX_GRID_DIM_X: 2**31 - 1, A.MAX_GRID_DIM_Y: 65535,
    A.MAX_GRID_DIM_Z: 65535, A.MAX_SHARED_MEMORY_PER_BLOCK: 48 * 1024,
    A.TOTAL_CONSTANT_MEMORY: 64 * 1024, A.WARP_SIZE: 32, A.MAX_PITCH: 2**31 - 1,
    A.MAX_REGISTERS_PER_BLOCK: 65536, A.CLOCK_RATE: 1_590_000, A.TEXTURE_ALIGNMENT: 512,
    A.GPU_OVERLAP: 1, A.KERNEL_EXEC_TIMEOUT: 0, A.INTEGRATED: 0, A.CAN_MAP_HOST_MEMORY: 1,
    A.COMPUTE_MODE: 0, A.CONCURRENT_KERNELS: 0, A.ECC_ENABLED: 0, A.PCI_BUS_ID: 0,
    A.TCC_DRIVER: 0, A.MEMORY_CLOCK_RATE: 5_001_000, A.GLOBAL_MEMORY_BUS_WIDTH: 256,
    A.L2_CACHE_SIZE: 4 * 1024 * 1024, A.MAX_THREADS_PER_MULTIPROCESSOR: 1024,
    A.ASYNC_ENGINE_COUNT: 2, A.UNIFIED_ADDRESSING: 1, A.PCI_DOMAIN_ID: 0,
    A.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: 64 * 1024,
    A.MAX_REGISTERS_PER_MULTIPROCESSOR: 65536, A.MANAGED_MEMORY: 0,
    A.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: 64 * 1024,
    A.COOPERATIVE_LAUNCH: 1,    # cuLaunchCooperativeKernel (docs/cuda.md)
}

DEVICE_NAME = "Gdev Emulated GPU"


@dataclass(frozen=True)
class DeviceInfo:
    """What a device reported through gquery when it was first probed."""

    ordinal: int
    total_mem: int
    mp_count: int
    chipset: int
    pci_vendor: int
    pci_device: int
    capability: tuple[int, int]

    def attribute(self, attrib: int) -> int:
        """The value of a CUdevice_attribute; INVALID_VALUE for one not reported."""
        if attrib == A.MULTIPROCESSOR_COUNT:
            return self.mp_count
        if attrib == A.COMPUTE_CAPABILITY_MAJOR:
            return self.capability[0]
        if attrib == A.COMPUTE_CAPABILITY_MINOR:
            return self.capability[1]
        if attrib == A.PCI_DEVICE_ID:
            return self.ordinal
        try:
            return _STATIC_ATTRIBUTES[attrib]
        except KeyError:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"attribute {attrib}") from None


def probe(backend: Any, ordinal: int) -> DeviceInfo:
    """Open a handle on vGPU ``ordinal``, read its properties with gquery, close it."""
    h = backend.gopen(ordinal)
    try:
        q = backend.gquery
        cc = int(q(h, GDEV_QUERY_COMPUTE_CAPABILITY))
        return DeviceInfo(
            ordinal=ordinal,
            total_mem=int(q(h, GDEV_QUERY_DEVICE_MEM_SIZE)),
            mp_count=int(q(h, GDEV_NVIDIA_QUERY_MP_COUNT)),
            chipset=int(q(h, GDEV_QUERY_CHIPSET)),
            pci_vendor=int(q(h, GDEV_QUERY_PCI_VENDOR)),
            pci_device=int(q(h, GDEV_QUERY_PCI_DEVICE)),
            capability=(cc >> 16, cc & 0xFFFF),
        )
    finally:
        backend.gclose(h)


class DeviceAPI(DriverCore):
    """cuInit, cuDriverGetVersion and cuDevice* entry points (mixed into the driver)."""

    def _device(self, dev: Any) -> int:
        """Validate a CUdevice (an int in [0, count))."""
        self._require_init()
        if isinstance(dev, bool) or not isinstance(dev, int):
            raise fail(CUresult.CUDA_ERROR_INVALID_DEVICE, f"bad device {dev!r}")
        if not 0 <= dev < self.device_count:
            raise fail(CUresult.CUDA_ERROR_INVALID_DEVICE, f"no device {dev}")
        return dev

    def _info(self, dev: Any) -> DeviceInfo:
        dev = self._device(dev)
        cache = self._device_info
        if dev not in cache:
            cache[dev] = probe(self.backend, dev)
        return cache[dev]

    @api
    def cuInit(self, flags: int = 0) -> None:
        """Initialize the driver: bind the backend and count devices (the vGPUs).

        ``flags`` must be 0.  No reachable Gdev (no daemon, no vGPU) is CUDA_ERROR_NO_DEVICE.
        """
        if flags != 0:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"cuInit flags {flags:#x}")
        if self.initialized:
            return
        try:
            backend = self._resolve_backend()
            count = int(backend.gdevice_count())
        except OSError as exc:
            raise fail(CUresult.CUDA_ERROR_NO_DEVICE, str(exc)) from exc
        if count <= 0:
            raise fail(CUresult.CUDA_ERROR_NO_DEVICE, "Gdev reports no virtual device")
        self.backend, self.device_count = backend, count
        self._device_info.clear()
        self.initialized = True

    @api
    def cuDriverGetVersion(self) -> int:
        """The CUDA version this driver implements (Gdev's 4000); needs no cuInit."""
        return GDEV_CUDA_VERSION

    @api
    def cuDeviceGetCount(self) -> int:
        """The number of devices (Gdev's virtual devices)."""
        self._require_init()
        return self.device_count

    @api
    def cuDeviceGet(self, ordinal: int) -> int:
        """The CUdevice of ``ordinal`` (INVALID_DEVICE outside [0, count))."""
        return self._device(ordinal)

    @api
    def cuDeviceGetName(self, dev: int) -> str:
        """The device's name."""
        self._info(dev)
        return DEVICE_NAME

    @api
    def cuDeviceComputeCapability(self, dev: int) -> tuple[int, int]:
        """(major, minor) compute capability of the device (7.5 for the emulated GPU)."""
        return self._info(dev).capability

    @api
    def cuDeviceTotalMem(self, dev: int) -> int:
        """Device memory of the vGPU in bytes (its memory share, GDEV_QUERY_DEVICE_MEM_SIZE)."""
        return self._info(dev).total_mem

    @api
    def cuDeviceGetAttribute(self, attrib: int, dev: int) -> int:
        """The value of a CUdevice_attribute for ``dev``."""
        return self._info(dev).attribute(int(attrib))
