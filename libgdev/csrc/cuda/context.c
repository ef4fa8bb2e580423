/* Contexts: one Gdev handle each (its own address space); the current context is a
 * per-thread stack, as in CUDA. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

#define STACK_MAX 16
#define NEED_INIT() do { if (!cu_initialized()) return CUDA_ERROR_NOT_INITIALIZED; } while (0)
static _Thread_local CUcontext stack[STACK_MAX];
static _Thread_local int depth;
/* Destroyed contexts stay allocated (and listed): a stale handle in another thread must read
 * CONTEXT_IS_DESTROYED, never freed memory. */
static pthread_mutex_t destroyed_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext destroyed;

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

CUresult cu_live(CUcontext *ctx)
{
    CUresult r = cu_current(ctx);
    return r ? r : (*ctx)->sticky;
}

/* A new context on device dev, pushed on the calling thread's stack if push. */
static CUresult new_context(CUcontext *pctx, unsigned flags, CUdevice dev, int push)
{
    CUcontext c = NULL;
    NEED_INIT();
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= cu_device_count())
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
    cu_ctx_defaults(c);
    pthread_mutex_init(&c->lock, NULL);
    if (push && depth == STACK_MAX)
        depth--;
    if (push)
        stack[depth++] = c;
    *pctx = c;
    return CUDA_SUCCESS;
}

static CUresult ctx_create(CUcontext *pctx, unsigned flags, CUdevice dev)
{
    return new_context(pctx, flags, dev, 1);
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

/* What the context's kernels printed, onto this process's stdout through stdio (so it keeps
 * its place among the host's own printf output), as CUDA's runtime prints it at
 * synchronizations, blocking copies and the context's end.  Nothing is asked of the daemon
 * unless a kernel that prints was launched since the last flush. */
void cu_printf_flush(CUcontext c)
{
    char buf[16384];
    int64_t n;
    if (!c || c->destroyed || !__atomic_exchange_n(&c->printf_pending, 0, __ATOMIC_ACQ_REL))
        return;
    do {
        n = gprintf_drain(c->h, buf, sizeof buf);
        if (n > 0)
            fwrite(buf, 1, (size_t)n, stdout);
    } while (n == (int64_t)sizeof buf);
}

API CUresult cuCtxDestroy(CUcontext ctx)
{
    if (!ctx || ctx->destroyed)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (__atomic_load_n(&ctx->printf_pending, __ATOMIC_ACQUIRE)) {
        gbarrier(ctx->h); /* what its last kernels print is written before it goes */
        cu_printf_flush(ctx);
    }
    for (int i = 0; i < depth; i++)
        if (stack[i] == ctx)
            stack[i] = NULL;
    while (depth && !stack[depth - 1])
        depth--;
    cu_unload_all(ctx); /* the event marker module too */
    cu_tex_forget(ctx);
    cu_array_forget(ctx); /* arrays' records; their memory went with the handle */
    cu_mipmap_forget(ctx);
    cu_host_forget(ctx);          /* its pinned buffers' records */
    cu_ipc_forget(ctx);           /* its opened IPC memory handles (ipc.c) */
    cu_pool_imports_drop(ctx);    /* and the pool pointers it imported (poolipc.c) */
    cu_pool_forget(ctx, 0);       /* its blocks leave their pools' accounting */
    cu_advice_forget(ctx, 0);     /* its managed memory's hints */
    ctx->marker = NULL;
    ctx->memops = NULL;
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
    r = cu_poison(c, cu_error(gbarrier(c->h)));
    cu_printf_flush(c);
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
    CURRENT(c);
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

/* ---- primary contexts: one per device, reference-counted, never pushed --------------- */

static pthread_mutex_t primary_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { CUcontext ctx; unsigned refs, flags; } primary[64];

API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CUresult r = CUDA_SUCCESS;
    NEED_INIT();
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= cu_device_count() || dev >= 64)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&primary_lock);
    if (!primary[dev].ctx) /* a primary context is not pushed on creation */
        r = new_context(&primary[dev].ctx, primary[dev].flags, dev, 0);
    if (!r) {
        primary[dev].refs++;
        *pctx = primary[dev].ctx;
    }
    pthread_mutex_unlock(&primary_lock);
    return r;
}

API CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    CUcontext gone = NULL;
    NEED_INIT();
    if (dev < 0 || dev >= cu_device_count() || dev >= 64)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&primary_lock);
    if (primary[dev].refs && !--primary[dev].refs) {
        gone = primary[dev].ctx;
        primary[dev].ctx = NULL;
    }
    pthread_mutex_unlock(&primary_lock);
    return gone ? cuCtxDestroy(gone) : CUDA_SUCCESS;
}

API CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    NEED_INIT();
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= cu_device_count() || dev >= 64)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&primary_lock);
    *flags = primary[dev].flags;
    *active = primary[dev].ctx != NULL;
    pthread_mutex_unlock(&primary_lock);
    return CUDA_SUCCESS;
}

API CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
    NEED_INIT();
    if (dev < 0 || dev >= cu_device_count() || dev >= 64)
        return CUDA_ERROR_INVALID_DEVICE;
    primary[dev].flags = flags; /* scheduling flags: libgdev spins, then blocks */
    return CUDA_SUCCESS;
}

API CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
    CUcontext gone;
    NEED_INIT();
    if (dev < 0 || dev >= cu_device_count() || dev >= 64)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&primary_lock);
    gone = primary[dev].ctx;
    primary[dev].ctx = NULL;
    primary[dev].refs = 0;
    pthread_mutex_unlock(&primary_lock);
    return gone ? cuCtxDestroy(gone) : CUDA_SUCCESS;
}

API CUresult cuCtxGetFlags(unsigned int *flags)
{
    CUcontext c = NULL;
    CUresult r = cu_current(&c);
    if (!r && !flags)
        return CUDA_ERROR_INVALID_VALUE;
    if (!r)
        *flags = c->flags;
    return r;
}
