"""Gdev's API constants (``common/gdev_api.h``, ``common/gdev_nvidia_def.h``) and our additions.

The single definition, shared by clients and the daemon (``gdevd.runtime.constants``
re-exports them), like the header both sides of Gdev include.  The numbers of Gdev's own
constants are kept so every Python name maps to a line of ``gdev_api.h``.  Queries that Gdev
lacks live at 0x200 and above, clear of Gdev's device-specific range (0x100..0x1ff).
"""

# gtune types
GDEV_TUNE_MEMCPY_PIPELINE_COUNT = 1
GDEV_TUNE_MEMCPY_CHUNK_SIZE = 2
GDEV_TUNE_DEVRT_PENDING = 0x200       # (gdev-py) device launches pending per host launch:
                                      # CUDA's cudaLimitDevRuntimePendingLaunchCount

# gquery types (Gdev)
GDEV_QUERY_DEVICE_MEM_SIZE = 1        # the vGPU's memory size (its share of the device)
GDEV_QUERY_DMA_MEM_SIZE = 2           # the vGPU's pinned host (DMA) memory size
GDEV_QUERY_CHIPSET = 3
GDEV_QUERY_BUS_TYPE = 4
GDEV_QUERY_AGP_SIZE = 5
GDEV_QUERY_PCI_VENDOR = 6
GDEV_QUERY_PCI_DEVICE = 7
GDEV_NVIDIA_QUERY_MP_COUNT = 0x100

# gquery types (gdev-py additions)
GDEV_QUERY_DEVICE_MEM_FREE = 0x200    # bytes the vGPU may still allocate (size - used)
GDEV_QUERY_DEVICE_MEM_USED = 0x201    # bytes charged to the vGPU
GDEV_QUERY_COMPUTE_CAPABILITY = 0x202  # (major << 16) | minor, e.g. 0x70005 for 7.5
GDEV_QUERY_DMA_MEM_FREE = 0x203       # pinned bytes the vGPU may still allocate

# context limits (CTX_LIMIT; CUDA's CUlimit numbers)
GDEV_LIMIT_MALLOC_HEAP_SIZE = 2       # the device heap of malloc/free in kernels

# IPC commands (gshmctl; Gdev's numbers)
GDEV_IPC_STAT = 1
GDEV_IPC_SET = 2
GDEV_IPC_RMID = 3
# gshmget keys and flags (System V's values: IPC_PRIVATE, IPC_CREAT, IPC_EXCL)
GDEV_IPC_PRIVATE = 0
GDEV_IPC_CREAT = 0o1000
GDEV_IPC_EXCL = 0o2000
