/* Context and device queries and settings: limits, stream priorities, ids, flags, events of
 * a whole context, shared-memory and L2 configuration, UUIDs, the legacy device properties,
 * profiler markers.
 *
 * Limits are recorded per context and reported; the emulated device has no fixed stack or
 * printf FIFO to size, so what they bound is not enforced (the interpreter bounds a
 * recursive kernel's stack itself: docs/ptx-engine.md).  The device heap's size (malloc in
 * kernels) is the daemon's (glimit): set there, rounded to pages, refused once a kernel
 * calling malloc launched (CUDA_ERROR_INVALID_VALUE) or beyond the context's memory share
 * (OUT_OF_MEMORY), read back from there.  The device runtime's (dynamic parallelism) sync
 * depth and pending-launch count are recorded too (there is no device-side synchronization
 * in CDP2); the pending-launch count also goes to the daemon (gtune
 * GDEV_TUNE_DEVRT_PENDING), which gives each later launch of a kernel that launches that
 * many parameter buffers (docs/ptx-engine.md).  A persisting-L2 size above 0 is
 * CUDA_ERROR_UNSUPPORTED_LIMIT (the device has none).  Streams of a context share its one handle and its one priority, so the
 * priority range is 0..0. */
#include <string.h>

#include "cuda_internal.h"

#include <cudaProfiler.h> /* after cuda_internal.h: cuda.h with the deprecated calls */

#define NEED_CTX(c) CUcontext c = NULL; do { CUresult r_ = cu_current(&c); if (r_) return r_; } \
    while (0)

void cu_ctx_defaults(CUcontext c)
{
    c->id = cu_next_id();
    c->limits[CU_LIMIT_STACK_SIZE] = 1024;
    c->limits[CU_LIMIT_PRINTF_FIFO_SIZE] = 1 << 20;
    c->limits[CU_LIMIT_MALLOC_HEAP_SIZE] = 8 << 20;
    c->limits[CU_LIMIT_MAX_L2_FETCH_GRANULARITY] = 32;
    c->limits[CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH] = 2;
    c->limits[CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT] = 2048;
}

static int settable(CUlimit limit, size_t value)
{
    switch (limit) {
    case CU_LIMIT_STACK_SIZE: case CU_LIMIT_PRINTF_FIFO_SIZE: case CU_LIMIT_MALLOC_HEAP_SIZE:
        return 1;
    case CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH: return value <= 24; /* CUDA's nesting limit */
    case CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT: return 1;
    case CU_LIMIT_MAX_L2_FETCH_GRANULARITY: return value <= 128;
    case CU_LIMIT_PERSISTING_L2_CACHE_SIZE: return value == 0;
    default: return 0;
    }
}

API CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
    NEED_CTX(c);
    if ((unsigned)limit >= CU_LIMIT_MAX || !settable(limit, value))
        return cu_fail(CUDA_ERROR_UNSUPPORTED_LIMIT, "cuCtxSetLimit: limit %d to %zu is not "
                       "supported by the emulated device", (int)limit, value);
    if (limit == CU_LIMIT_MALLOC_HEAP_SIZE) {
        uint64_t now;
        int err = glimit(c->h, GDEV_LIMIT_MALLOC_HEAP_SIZE, 1, value, &now);
        if (err)
            return cu_fail(cu_error(err), "cuCtxSetLimit: %s", gdev_last_error());
        value = now;
    }
    if (limit == CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT) { /* sizes the daemon's arenas */
        if (value == 0 || value > UINT32_MAX || gtune(c->h, GDEV_TUNE_DEVRT_PENDING,
                                                      (uint32_t)value))
            return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuCtxSetLimit: %zu pending device "
                           "launches: the daemon takes 1..65536", value);
    }
    c->limits[limit] = value;
    return CUDA_SUCCESS;
}

API CUresult cuCtxGetLimit(size_t *value, CUlimit limit)
{
    NEED_CTX(c);
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    if ((unsigned)limit >= CU_LIMIT_MAX || !settable(limit, 0))
        return CUDA_ERROR_UNSUPPORTED_LIMIT;
    if (limit == CU_LIMIT_MALLOC_HEAP_SIZE) {
        uint64_t now;
        int err = glimit(c->h, GDEV_LIMIT_MALLOC_HEAP_SIZE, 0, 0, &now);
        if (err)
            return cu_error(err);
        *value = now;
        return CUDA_SUCCESS;
    }
    *value = c->limits[limit];
    return CUDA_SUCCESS;
}

API CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest)
{
    NEED_CTX(c);
    (void)c;
    if (least)
        *least = 0;
    if (greatest)
        *greatest = 0;
    return CUDA_SUCCESS;
}

API CUresult cuCtxGetId(CUcontext ctx, unsigned long long *id)
{
    if (!ctx) {
        NEED_CTX(c);
        ctx = c;
    }
    if (!id)
        return CUDA_ERROR_INVALID_VALUE;
    if (ctx->destroyed)
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    *id = ctx->id;
    return CUDA_SUCCESS;
}

/* The scheduling flags choose how a host thread waits; libgdev's waits spin, then block,
 * whatever they say.  They are kept and reported (cuCtxGetFlags). */
API CUresult cuCtxSetFlags(unsigned int flags)
{
    const unsigned known = CU_CTX_SCHED_MASK | CU_CTX_MAP_HOST | CU_CTX_LMEM_RESIZE_TO_MAX |
                           CU_CTX_COREDUMP_ENABLE | CU_CTX_USER_COREDUMP_ENABLE |
                           CU_CTX_SYNC_MEMOPS;
    NEED_CTX(c);
    if (flags & ~known || (flags & CU_CTX_SCHED_MASK) == CU_CTX_SCHED_MASK)
        return CUDA_ERROR_INVALID_VALUE;
    c->flags = flags;
    return CUDA_SUCCESS;
}

/* The context's work is what its legacy stream waits for: the legacy stream and every
 * blocking stream (non-blocking streams run apart from it, and are not captured). */
API CUresult cuCtxRecordEvent(CUcontext ctx, CUevent e)
{
    CUresult r;
    if (!ctx || ctx->destroyed || !e)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((r = cuCtxPushCurrent(ctx)))
        return r;
    r = cu_stream_nop(NULL); /* a legacy-stream op: after the blocking streams' work */
    if (!r)
        r = cuEventRecord(e, NULL);
    cuCtxPopCurrent(NULL);
    return r;
}

/* Later work of the legacy stream, and so of every blocking stream, waits for e. */
API CUresult cuCtxWaitEvent(CUcontext ctx, CUevent e)
{
    CUresult r;
    if (!ctx || ctx->destroyed || !e)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((r = cuCtxPushCurrent(ctx)))
        return r;
    r = cuStreamWaitEvent(NULL, e, 0);
    cuCtxPopCurrent(NULL);
    return r;
}

/* Shared-memory banks do not conflict in the emulation: the configuration is a hint. */
API CUresult cuCtxGetSharedMemConfig(CUsharedconfig *config)
{
    NEED_CTX(c);
    (void)c;
    if (!config)
        return CUDA_ERROR_INVALID_VALUE;
    *config = CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE;
    return CUDA_SUCCESS;
}

API CUresult cuCtxSetSharedMemConfig(CUsharedconfig config)
{
    NEED_CTX(c);
    (void)c;
    return config > CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE ? CUDA_ERROR_INVALID_VALUE
                                                              : CUDA_SUCCESS;
}

/* There are no persisting L2 lines to reset (CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE
 * is 0). */
API CUresult cuCtxResetPersistingL2Cache(void)
{
    NEED_CTX(c);
    (void)c;
    return CUDA_SUCCESS;
}

/* A stable identity per device of the daemon: "GDEV" and the device number. */
API CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    CUresult r = cu_valid_device(dev);
    if (r || !uuid)
        return r ? r : CUDA_ERROR_INVALID_VALUE;
    memset(uuid, 0, sizeof *uuid);
    memcpy(uuid->bytes, "GDEV-emulated", 13);
    uuid->bytes[14] = (char)(dev >> 8);
    uuid->bytes[15] = (char)dev;
    return CUDA_SUCCESS;
}

/* CUDA 9.2's form keeps the plain name (cuda.h maps cuDeviceGetUuid to _v2, the same). */
API CUresult cu_device_get_uuid_v1(CUuuid *uuid, CUdevice dev) __asm__("cuDeviceGetUuid");
API CUresult cu_device_get_uuid_v1(CUuuid *uuid, CUdevice dev)
{
    return cuDeviceGetUuid(uuid, dev);
}

/* A LUID is a Windows (WDDM) identity. */
API CUresult cuDeviceGetLuid(char *luid, unsigned int *mask, CUdevice dev)
{
    CUresult r = cu_valid_device(dev);
    if (r || !luid || !mask)
        return r ? r : CUDA_ERROR_INVALID_VALUE;
    return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "cuDeviceGetLuid: LUIDs exist on Windows only");
}

API CUresult cuDeviceGetProperties(CUdevprop *p, CUdevice dev)
{
    static const CUdevice_attribute dims[] = {
        CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
        CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,
        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z};
    CUresult r = CUDA_SUCCESS;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    memset(p, 0, sizeof *p);
    for (int i = 0; i < 3 && !r; i++)
        if (!(r = cuDeviceGetAttribute(&p->maxThreadsDim[i], dims[i], dev)))
            r = cuDeviceGetAttribute(&p->maxGridSize[i], dims[i + 3], dev);
    struct { int *out; CUdevice_attribute a; } one[] = {
        {&p->maxThreadsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK},
        {&p->sharedMemPerBlock, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK},
        {&p->totalConstantMemory, CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY},
        {&p->SIMDWidth, CU_DEVICE_ATTRIBUTE_WARP_SIZE},
        {&p->memPitch, CU_DEVICE_ATTRIBUTE_MAX_PITCH},
        {&p->regsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK},
        {&p->clockRate, CU_DEVICE_ATTRIBUTE_CLOCK_RATE},
        {&p->textureAlign, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT}};
    for (size_t i = 0; i < sizeof one / sizeof one[0] && !r; i++)
        r = cuDeviceGetAttribute(one[i].out, one[i].a, dev);
    return r;
}

/* No profiler attaches to the emulated device: the markers delimit nothing. */
API CUresult cuProfilerStart(void)
{
    NEED_CTX(c);
    (void)c;
    return CUDA_SUCCESS;
}

API CUresult cuProfilerStop(void)
{
    NEED_CTX(c);
    (void)c;
    return CUDA_SUCCESS;
}

/* CUDA 13's forms naming the context (NULL: the current one). */
API CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
    if (!ctx)
        return cuCtxGetDevice(device);
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (ctx->destroyed)
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    *device = ctx->dev;
    return CUDA_SUCCESS;
}

API CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    CUresult r;
    if (!ctx)
        return cuCtxSynchronize();
    if (ctx->destroyed)
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    if ((r = cuCtxPushCurrent(ctx)))
        return r;
    r = cuCtxSynchronize();
    cuCtxPopCurrent(NULL);
    return r;
}
