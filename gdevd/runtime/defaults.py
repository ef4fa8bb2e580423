"""Every default and bound of the runtime, in one place.

Each name here becomes a ``/proc/gdev`` tunable (or documents why it is a hard limit).  The
values follow the original Gdev (``mod/gdev/gdev_conf.h``, ``common/gdev_*.h``) unless a
comment says that ours was measured; ``scripts/bench/memcpy.py`` measures the memcpy ones.
"""

from __future__ import annotations

from gdevd.gpu import copyengine as _engine
from libgdev.spin import spin_window

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

# --- the emulated hardware -------------------------------------------------------------
GPUS = 1                              # physical GPUs (GDEV_PHYSICAL_DEVICE_MAX_COUNT = 8)
GPUS_MAX = 8
MEMORY = 8 * GiB                      # device memory per physical GPU (lazy: costs no RSS)
DMA_MEMORY = 2 * GiB                  # host DMA pool per physical GPU (Gdev: 512 MB; public
                                      # programs pin 128 MiB and more)
VGPUS = 4                             # virtual GPUs per physical GPU (GDEV0_VIRTUAL_DEVICE_COUNT)
VGPUS_MAX = 64
MP_COUNT = 40                         # multiprocessors (a Tesla T4, compute capability 7.5)
NAME = "Gdev Emulated GPU"
COMPUTE_CAPABILITY = (7, 5)
CHIPSET = 0x164                       # TU104, the chip of compute capability 7.5
PCI_VENDOR = 0x10DE                   # NVIDIA
PCI_DEVICE = 0x1EB8                   # Tesla T4
BUS_TYPE = 2                          # nouveau's NV_PCIE
AGP_SIZE = 0

# --- virtual GPUs (Gdev's /proc/gdev/vdN defaults) -------------------------------------
PERIOD_US = 30_000                    # GDEV_PERIOD_DEFAULT
PERIOD_US_MIN = 1
PERIOD_US_MAX = (1 << 32) - 1          # Gdev keeps it in an unsigned 32-bit field
PERCENT_MAX = 100

# --- address spaces ---------------------------------------------------------------------
PAGE_SIZE = 4096
VAS_USER_START = 0x20000000           # GDEV_VAS_USER_START
VAS_USER_END = 1 << 40                # GDEV_VAS_USER_END (40-bit GPU VAs)
DMA_APERTURES = 63                    # apertures 1..63 of a context hold pinned buffers

# --- memcpy (gtune bounds are Gdev's; defaults measured, see docs/benchmarks.md) --------
# The chunk and depth bounds are the copy engine's (gdevd/gpu/csrc/gdev_core.h), read from
# the compiled core so that Python and C cannot disagree.
CHUNK_SIZE = 4 * MiB                  # GDEV_CHUNK_DEFAULT_SIZE (paper: 4 MB best)
CHUNK_SIZE_MIN: int = _engine.CHUNK_MIN   # 4 KiB
CHUNK_SIZE_MAX: int = _engine.CHUNK_MAX   # GDEV_CHUNK_MAX_SIZE, 32 MiB
PIPELINE_COUNT = 2                    # GDEV_PIPELINE_DEFAULT_COUNT
PIPELINE_COUNT_MIN = 1
PIPELINE_COUNT_MAX: int = _engine.DEPTH_MAX  # GDEV_PIPELINE_MAX_COUNT, 4
# Direct-I/O boundaries (GDEV_MEMCPY_IOWRITE_LIMIT / IOREAD_LIMIT).  Measured (Fig. 4 in
# docs/benchmarks.md): a direct copy beats the chunked path at every size up to 4 MiB here,
# because the chunked path pays a thread hand-off; but a direct copy runs on the trio loop
# and delays every other context's call.  The boundary is the largest size whose direct copy
# stays within DIRECT_BUDGET_US on the loop.
DIRECT_BUDGET_US = 100
IOWRITE_LIMIT = 1 * MiB               # HtoD
IOREAD_LIMIT = 1 * MiB                # DtoH
DIRECT_LIMIT_MAX = 1 * GiB            # a direct copy this large would stall the loop for seconds

# --- fences and the compute engine -------------------------------------------------------
FENCE_COUNT = 4096                    # GDEV_FENCE_COUNT: sequences wrap to 1, 0 is reserved
COMPUTE_SLICE = 4096                  # instruction steps per slice of a running launch
WATCHDOG_S: float | None = None       # initial kernel_time_max (seconds); None: KERNEL_TIME_MAX_MS
SLICE_US = 10_000                     # preemption slice (/proc/gdev/slice_us; 0: non-preemptive)
KERNEL_TIME_MAX_MS = 600_000          # tenants' kernels are killed (ETIME) after this run time
                                      # (emulated: a public sample's 4096^3 GEMM runs minutes)
GUEST_FREQ = 30                       # guests' periodic mode: F periods per second (host frames)
GUEST_PIECE_US = 10_000               # guests' periodic mode: P, engine time per period
GUEST_MEM_THRESHOLD = 1 << 20         # hosts holding more device memory: the GPU is in use
DECODE_CACHE = 64                     # decoded PTX modules kept per physical GPU
CONTEXTS_MAX = 128                    # GDEV_CONTEXT_MAX_COUNT handles per physical GPU

# --- memory management (swapping and shared memory) ---------------------------------------
PRIO_MIN = 0                          # GDEV_PRIO_MIN
PRIO_MAX = 40                         # GDEV_PRIO_MAX
PRIO_DEFAULT = 20                     # GDEV_PRIO_DEFAULT (nice 0)
SWAP_PERCENT = 10                     # temporal device swap area, percent of device memory
SWAP_PERCENT_MAX = 50                 # the rest is the vGPUs' memory
HOST_SWAP = 4 * GiB                   # host swap per physical GPU (bytes; lazily touched)
SWAP_INLINE_MAX = 256 * KiB           # swap copies up to this size run on the loop itself
SHM_SEGMENTS = 512                    # GDEV_SHM_SEGMENT_COUNT (system wide)
# --- the scheduler (gdevd/runtime/sched, docs/scheduling.md) ------------------------------
SCHED_POLICY = "band"                 # band | credit | fifo | null (/proc/gdev/scheduler)
SCHED_QUEUEING = "mrq"                # mrq | sdq (/proc/gdev/queueing)
BAND_WAIT_US = 500                    # BAND time buffering (paper: 500 us)
UTIL_WINDOW_US = 1_000_000            # utilisation window (GDEV_UPDATE_INTERVAL)
INSTANCES_MAX = 32                    # launches in flight per context (GDEV_INSTANCES_LIMIT)

# --- the ioctl socket ----------------------------------------------------------------------
# After a reply, gdevd polls a connection whose client calls back to back for this long
# before sleeping in epoll (gdevd/ioctl/busypoll.py; 0 turns it off).  Measured with
# scripts/bench/ioctl.py: gquery's median ~80 us with neither side polling, ~27 us with
# only gdevd polling, 14-16 us with the client polling too (docs/abi.md).
IOCTL_POLL_US = spin_window(50)       # 0 on a one-CPU machine, where polling cannot pay
IOCTL_POLL_US_MAX = 1000

# --- per-tenant limits (docs/security.md): each protects the other tenants --------------------
# Connections to the ioctl socket that have not yet presented a token (HELLO): an honest
# client sends HELLO at once, so a few per user are plenty; the rest are a flood.
PREAUTH_MAX = 64                      # unauthenticated connections, all users together
PREAUTH_PER_UID = 16                  # ... of one user
PREAUTH_TIMEOUT_S = 5.0               # a connection without HELLO after this is closed
CONTEXTS_PER_USER = 32                # contexts one non-root user may hold per physical GPU
CONTEXTS_RESERVED = 8                 # of CONTEXTS_MAX, kept for root and in-daemon modules
PRINTF_FIFO = 1 * MiB                 # device printf bytes a context holds between syncs
MALLOC_HEAP_SIZE = 8 * MiB            # a context's device heap (malloc in kernels), CUDA's
DEVRT_PENDING = 2048                  # device launches pending per host launch (CUDA's
                                      # cudaLimitDevRuntimePendingLaunchCount), runtime/devrt.py
DEVRT_PENDING_MAX = 1 << 16           # ... at most (gtune GDEV_TUNE_DEVRT_PENDING)
PINNED_PER_SESSION = 512 * MiB        # pinned host bytes one context may hold (staging too)
LAUNCHES_QUEUED_MAX = 64              # launches one context may have queued or running
SHM_PER_USER = 64                     # shm segments one non-root user may create
VMM_RESERVATIONS = 1024               # VA reservations (gvm_reserve) one context may hold
VMM_HANDLES = 4096                    # allocation handles (gvm_create/retain/import) per context
VMM_MAPPINGS = 16384                  # gvm_map mappings one context may hold
IPC_OPENS = 1024                      # exported allocations one context may hold open (gipc_open)
IPC_EVENTS = 1024                     # interprocess events one context may hold (created, opened)

# --- bounds of every tunable, by its /proc/gdev name (the config file's checks and the
# procfs entries both read them here) -----------------------------------------------------
BOUNDS: dict[str, tuple[int, int]] = {
    "period": (PERIOD_US_MIN, PERIOD_US_MAX),
    "compute_bandwidth": (0, PERCENT_MAX),
    "memory_bandwidth": (0, PERCENT_MAX),
    "memory_share": (0, PERCENT_MAX),
    "watchdog_ms": (0, 86_400_000),
    "guest": (0, 1),
    "swap_percent": (0, SWAP_PERCENT_MAX),
    "ioctl_poll_us": (0, IOCTL_POLL_US_MAX),
    "chunk_size": (CHUNK_SIZE_MIN, CHUNK_SIZE_MAX),
    "pipeline_count": (PIPELINE_COUNT_MIN, PIPELINE_COUNT_MAX),
    "iowrite_limit": (0, DIRECT_LIMIT_MAX),
    "ioread_limit": (0, DIRECT_LIMIT_MAX),
    "band_wait_us": (0, 1_000_000),
    "util_window_us": (1000, 60_000_000),
    "instances_max": (1, 4096),
    "slice_us": (0, 10_000),
    "kernel_time_max_ms": (0, 86_400_000),
    "guest_freq": (1, 1000),
    "guest_piece_us": (100, 1_000_000),
    "guest_mem_threshold": (0, 1 << 40),
    "priority": (PRIO_MIN, PRIO_MAX),
    "cpu_threshold": (0, 1 << 30),
    "ptx_compile_nice": (0, 19),
    "compute_nice": (0, 19),
}
