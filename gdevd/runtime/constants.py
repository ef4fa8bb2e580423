"""The runtime's constants: Gdev's API constants (defined once in :mod:`libgdev.constants`,
shared with clients) plus the daemon's own (operation codes, memory types, copy paths)."""

from __future__ import annotations

from libgdev.constants import (  # noqa: F401 - re-exported: the API constants
    GDEV_IPC_CREAT,
    GDEV_IPC_EXCL,
    GDEV_IPC_PRIVATE,
    GDEV_IPC_RMID,
    GDEV_IPC_SET,
    GDEV_IPC_STAT,
    GDEV_LIMIT_MALLOC_HEAP_SIZE,
    GDEV_NVIDIA_QUERY_MP_COUNT,
    GDEV_QUERY_AGP_SIZE,
    GDEV_QUERY_BUS_TYPE,
    GDEV_QUERY_CHIPSET,
    GDEV_QUERY_COMPUTE_CAPABILITY,
    GDEV_QUERY_DEVICE_MEM_FREE,
    GDEV_QUERY_DEVICE_MEM_SIZE,
    GDEV_QUERY_DEVICE_MEM_USED,
    GDEV_QUERY_DMA_MEM_FREE,
    GDEV_QUERY_DMA_MEM_SIZE,
    GDEV_QUERY_PCI_DEVICE,
    GDEV_QUERY_PCI_VENDOR,
    GDEV_TUNE_DEVRT_PENDING,
    GDEV_TUNE_MEMCPY_CHUNK_SIZE,
    GDEV_TUNE_MEMCPY_PIPELINE_COUNT,
)

QUERY_TYPES = frozenset({
    GDEV_QUERY_DEVICE_MEM_SIZE, GDEV_QUERY_DMA_MEM_SIZE, GDEV_QUERY_CHIPSET,
    GDEV_QUERY_BUS_TYPE, GDEV_QUERY_AGP_SIZE, GDEV_QUERY_PCI_VENDOR, GDEV_QUERY_PCI_DEVICE,
    GDEV_NVIDIA_QUERY_MP_COUNT, GDEV_QUERY_DEVICE_MEM_FREE, GDEV_QUERY_DEVICE_MEM_USED,
    GDEV_QUERY_COMPUTE_CAPABILITY, GDEV_QUERY_DMA_MEM_FREE,
})

# internal operation codes (gdev_device.h)
GDEV_OP_COMPUTE = 1
GDEV_OP_MEMCPY = 2
GDEV_OP_MEMCPY_ASYNC = 3

# memory object types
GDEV_MEM_DEVICE = 0x01
GDEV_MEM_DMA = 0x02

# copy paths, as counted in Handle.counters.copies (the paper's section 1.4 terms)
PATH_DIRECT = "direct"                # direct I/O through the MMU (small copies)
PATH_PINNED = "pinned"                # one copy from/to a pinned (DMA) buffer
PATH_PIPELINED = "pipelined"          # chunked through >= 2 bounce buffers, overlapped
PATH_CHUNKED = "chunked"              # chunked through one bounce buffer at a time
PATH_DEVICE = "device"                # inside the unified address space (gmemcpy)
PATH_SWAP = "swap"                    # a DtoH copy served from swap (nothing brought back)
