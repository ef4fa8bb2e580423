/* cuInit, devices (a CUdevice is a vGPU minor, as in Gdev) and contexts (one Gdev handle
 * each; the current context is a per-thread stack, as in CUDA). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

#define STACK_MAX 16
static int initialized;
static int device_count;
static _Thread_local CUcontext stack[STACK_MAX];
static _Thread_local int depth;
/* Destroyed contexts stay allocated (and listed): a stale handle in another thread must read
 * CONTEXT_IS_DESTROYED, never freed memory. */
static pthread_mutex_t destroyed_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext destroyed;

int cu_initialized(void)
{
    return initialized;
}

API CUresult cuInit(unsigned int flags)
{
    if (flags)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuInit: flags must be 0");
    if (gdevice_count(&device_count) < 0)
        return cu_fail(CUDA_ERROR_NO_DEVICE, "cuInit: %s", gdev_last_error());
    if (device_count <= 0)
        return cu_fail(CUDA_ERROR_NO_DEVICE, "cuInit: gdevd serves no virtual GPU");
    initialized = 1;
    return CUDA_SUCCESS;
}

API CUresult cuDriverGetVersion(int *version)
{
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    *version = GDEV_CUDA_VERSION;
    return CUDA_SUCCESS;
}

#define NEED_INIT() do { if (!initialized) return CUDA_ERROR_NOT_INITIALIZED; } while (0)

API CUresult cuDeviceGetCount(int *count)
{
    NEED_INIT();
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = device_count;
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    NEED_INIT();
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (ordinal < 0 || ordinal >= device_count)
        return cu_fail(CUDA_ERROR_INVALID_DEVICE, "cuDeviceGet: %d of %d", ordinal,
                       device_count);
    *device = ordinal;
    return CUDA_SUCCESS;
}

/* gquery on a short-lived handle of device dev. */
static CUresult query(CUdevice dev, uint32_t type, uint64_t *out)
{
    Ghandle h;
    int err;
    NEED_INIT();
    if (dev < 0 || dev >= device_count)
        return CUDA_ERROR_INVALID_DEVICE;
    h = gopen(dev);
    if (!h)
        return cu_fail(CUDA_ERROR_INVALID_DEVICE, "%s", gdev_last_error());
    err = gquery(h, type, out);
    gclose(h);
    return cu_error(err);
}

API CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    static const char n[] = "Gdev Emulated GPU";
    NEED_INIT();
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= device_count)
        return CUDA_ERROR_INVALID_DEVICE;
    strncpy(name, n, (size_t)len - 1);
    name[len - 1] = '\0';
    return CUDA_SUCCESS;
}

API CUresult cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
    uint64_t v;
    CUresult r;
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    r = query(dev, GDEV_QUERY_DEVICE_MEM_SIZE, &v);
    if (!r)
        *bytes = v;
    return r;
}

API CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
    uint64_t v;
    CUresult r;
    if (!major || !minor)
        return CUDA_ERROR_INVALID_VALUE;
    r = query(dev, GDEV_QUERY_COMPUTE_CAPABILITY, &v);
    if (!r) {
        *major = (int)(v >> 16);
        *minor = (int)(v & 0xffff);
    }
    return r;
}

static int static_attribute(CUdevice_attribute a)
{
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
        return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 0x7fffffff;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
        return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return 48 * 1024;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: return 64 * 1024;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: return 0x7fffffff;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: return 65536;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return 1590000;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: return 512;
    case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: return 1;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: return 5001000;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 256;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: return 4 * 1024 * 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: return 1024;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: return 2;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: return 64 * 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: return 65536;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: return 64 * 1024;
    default: return 0; /* features the emulated device lacks */
    }
}

API CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    uint64_t v;
    CUresult r = CUDA_SUCCESS;
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        r = query(dev, GDEV_NVIDIA_QUERY_MP_COUNT, &v);
        break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
        r = query(dev, GDEV_QUERY_COMPUTE_CAPABILITY, &v);
        v = attrib == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ? v >> 16 : v & 0xffff;
        break;
    default:
        NEED_INIT();
        if (dev < 0 || dev >= device_count)
            return CUDA_ERROR_INVALID_DEVICE;
        v = (uint64_t)static_attribute(attrib);
    }
    if (!r)
        *pi = (int)v;
    return r;
}

/* ---- contexts ---------------------------------------------------------------------- */

CUresult cu_current(CUcontext *ctx)
{
    NEED_INIT();
    if (!depth || !stack[depth - 1])
        return cu_fail(CUDA_ERROR_INVALID_CONTEXT, "no current context");
    if (stack[depth - 1]->destroyed)
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    *ctx = stack[depth - 1];
    return CUDA_SUCCESS;
}

static CUresult ctx_create(CUcontext *pctx, unsigned flags, CUdevice dev)
{
    CUcontext c = NULL;
    NEED_INIT();
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= device_count)
        return CUDA_ERROR_INVALID_DEVICE;
    c = calloc(1, sizeof *c);
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    c->h = gopen(dev);
    if (!c->h) {
        free(c);
        return cu_fail(CUDA_ERROR_INVALID_DEVICE, "cuCtxCreate: %s", gdev_last_error());
    }
    c->dev = dev;
    c->flags = flags;
    pthread_mutex_init(&c->lock, NULL);
    if (depth == STACK_MAX)
        depth--;
    stack[depth++] = c;
    *pctx = c;
    return CUDA_SUCCESS;
}

API CUresult cuCtxCreate(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags,
                         CUdevice dev)
{
    (void)params; /* execution affinity and CIG parameters do not apply to vGPUs */
    return ctx_create(pctx, flags, dev);
}

/* The older versioned names, each with its own prototype (cuda.h maps the plain name to
 * the newest); declared here because cuda.h hides them. */
API CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return ctx_create(pctx, flags, dev);
}

API CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *params, int n,
                            unsigned int flags, CUdevice dev)
{
    (void)params;
    (void)n;
    return ctx_create(pctx, flags, dev);
}

API CUresult cuCtxDestroy(CUcontext ctx)
{
    if (!ctx || ctx->destroyed)
        return CUDA_ERROR_INVALID_CONTEXT;
    for (int i = 0; i < depth; i++)
        if (stack[i] == ctx)
            stack[i] = NULL;
    while (depth && !stack[depth - 1])
        depth--;
    cu_unload_all(ctx); /* the event marker module too */
    ctx->marker = NULL;
    ctx->destroyed = 1;
    gclose(ctx->h); /* the daemon frees every object of the context */
    ctx->h = NULL;
    free(ctx->allocs);
    ctx->allocs = NULL;
    pthread_mutex_lock(&destroyed_lock);
    ctx->next_destroyed = destroyed;
    destroyed = ctx;
    pthread_mutex_unlock(&destroyed_lock);
    return CUDA_SUCCESS;
}

API CUresult cuCtxPushCurrent(CUcontext ctx)
{
    NEED_INIT();
    if (!ctx || ctx->destroyed)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (depth == STACK_MAX)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "context stack is full");
    stack[depth++] = ctx;
    return CUDA_SUCCESS;
}

API CUresult cuCtxPopCurrent(CUcontext *pctx)
{
    NEED_INIT();
    if (!depth)
        return CUDA_ERROR_INVALID_CONTEXT;
    depth--;
    if (pctx)
        *pctx = stack[depth];
    return CUDA_SUCCESS;
}

API CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    NEED_INIT();
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = depth ? stack[depth - 1] : NULL;
    return CUDA_SUCCESS;
}

API CUresult cuCtxSetCurrent(CUcontext ctx)
{
    NEED_INIT();
    if (ctx && ctx->destroyed)
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    if (!ctx) {
        if (depth)
            depth--;
        return CUDA_SUCCESS;
    }
    if (!depth)
        depth = 1;
    stack[depth - 1] = ctx;
    return CUDA_SUCCESS;
}

API CUresult cuCtxGetDevice(CUdevice *device)
{
    CUcontext c = NULL;
    CUresult r = cu_current(&c);
    if (!r && !device)
        return CUDA_ERROR_INVALID_VALUE;
    if (!r)
        *device = c->dev;
    return r;
}

API CUresult cuCtxSynchronize(void)
{
    CUcontext c = NULL;
    CUresult r = cu_current(&c);
    if (r)
        return r;
    if (c->sticky)
        return c->sticky;
    r = cu_error(gbarrier(c->h));
    if (r == CUDA_ERROR_ILLEGAL_ADDRESS)
        c->sticky = r;
    return r;
}

API CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    if (ctx && ctx->destroyed)
        return CUDA_ERROR_INVALID_CONTEXT;
    *version = 3020;
    return CUDA_SUCCESS;
}

API CUresult cuCtxGetCacheConfig(CUfunc_cache *config)
{
    CUcontext c = NULL;
    CUresult r = cu_current(&c);
    if (r)
        return r;
    if (!config)
        return CUDA_ERROR_INVALID_VALUE;
    *config = CU_FUNC_CACHE_PREFER_NONE;
    return CUDA_SUCCESS;
}

API CUresult cuCtxSetCacheConfig(CUfunc_cache config)
{
    CUcontext c = NULL;
    (void)config; /* the emulated device has one shared-memory configuration */
    return cu_current(&c);
}
