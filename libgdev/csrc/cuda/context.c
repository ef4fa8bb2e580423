#define _GNU_SOURCE /* PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP */
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

/* Opens context c (zeroed) on device dev: its Gdev handle and defaults. */
static CUresult open_context(CUcontext c, unsigned flags, CUdevice dev)
{
    c->h = gopen(dev);
    if (!c->h)
        return cu_fail(CUDA_ERROR_INVALID_DEVICE, "cuCtxCreate: %s", gdev_last_error());
    c->dev = dev;
    c->flags = flags;
    cu_ctx_defaults(c);
    pthread_mutex_init(&c->lock, NULL);
    return CUDA_SUCCESS;
}

static CUresult check_device(CUdevice dev)
{
    NEED_INIT();
    if (dev < 0 || dev >= cu_device_count() || dev >= 64)
        return CUDA_ERROR_INVALID_DEVICE;
    return CUDA_SUCCESS;
}

/* A new context on device dev, pushed on the calling thread's stack. */
static CUresult ctx_create(CUcontext *pctx, unsigned flags, CUdevice dev)
{
    CUresult r = check_device(dev);
    if (r)
        return r;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    CUcontext c = calloc(1, sizeof *c);
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    r = open_context(c, flags, dev);
    if (r) {
        free(c);
        return r;
    }
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
    cu_cls_release(ctx); /* the runtime's own state of the context goes first, as in CUDA */
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
    if (ctx->primary)
        return CUDA_SUCCESS; /* listed in primary[] for good */
    pthread_mutex_lock(&destroyed_lock);
    ctx->next_destroyed = destroyed;
    destroyed = ctx;
    pthread_mutex_unlock(&destroyed_lock);
    return CUDA_SUCCESS;
}

/* An inactive primary context made current is activated, as NVIDIA's driver does for its
 * static runtime (which sets the handle from cu_primary_handle current, never retaining it);
 * SUCCESS for any other context. */
static CUresult wake_primary(CUcontext ctx);

API CUresult cuCtxPushCurrent(CUcontext ctx)
{
    NEED_INIT();
    if (ctx && wake_primary(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
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
    if (ctx && wake_primary(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
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

/* ---- primary contexts: one per device, reference-counted, never pushed ---------------
 * A primary context's struct lives as long as the process: its handle stays the same across
 * release and reset, as in CUDA (NVIDIA's static runtime holds it from before its first
 * retain, export.c).  It is inactive (destroyed, without a Gdev handle) while nobody holds
 * it.  The lock is recursive: a context-local storage destructor that runs inside a release
 * may call back into the driver. */

static pthread_mutex_t primary_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static struct { CUcontext ctx; unsigned refs, flags; } primary[64];

/* The primary context's struct of device dev, made inactive on first use (primary_lock held). */
static CUcontext primary_struct(CUdevice dev)
{
    if (!primary[dev].ctx) {
        CUcontext c = calloc(1, sizeof *c);
        if (!c)
            return NULL;
        c->dev = dev;
        c->destroyed = 1;
        c->primary = 1;
        primary[dev].ctx = c;
    }
    return primary[dev].ctx;
}

/* The checks of a call that answers device dev's primary context in *pctx. */
static CUresult check_primary_call(CUcontext *pctx, CUdevice dev)
{
    CUresult r = check_device(dev);
    return r ? r : pctx ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cu_primary_handle(CUcontext *pctx, CUdevice dev)
{
    CUresult r = check_primary_call(pctx, dev);
    if (r)
        return r;
    pthread_mutex_lock(&primary_lock);
    *pctx = primary_struct(dev);
    pthread_mutex_unlock(&primary_lock);
    return *pctx ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

/* Opens the inactive primary context c in place (primary_lock held). */
static CUresult activate(CUcontext c, CUdevice dev)
{
    memset(c, 0, sizeof *c); /* what its last life left (allocation table, modules) is gone */
    c->primary = 1;
    c->dev = dev;
    CUresult r = open_context(c, primary[dev].flags, dev);
    if (r)
        c->destroyed = 1;
    return r;
}

API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CUresult r = check_primary_call(pctx, dev);
    if (r)
        return r;
    pthread_mutex_lock(&primary_lock);
    CUcontext c = primary_struct(dev);
    if (!c)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    else if (!primary[dev].refs) /* a primary context is not pushed on creation */
        r = activate(c, dev);
    if (!r) {
        primary[dev].refs++;
        *pctx = c;
    }
    pthread_mutex_unlock(&primary_lock);
    return r;
}

static CUresult wake_primary(CUcontext ctx)
{
    CUresult r = CUDA_SUCCESS;
    if (!ctx->primary || !ctx->destroyed) /* the common case, without the lock */
        return r;
    pthread_mutex_lock(&primary_lock);
    if (!primary[ctx->dev].refs) {
        r = activate(ctx, ctx->dev);
        primary[ctx->dev].refs = !r;
    }
    pthread_mutex_unlock(&primary_lock);
    return r;
}

/* Closes device dev's primary context if it is active, down to no reference. */
static CUresult deactivate(CUdevice dev, int all)
{
    CUresult r = check_device(dev);
    if (r)
        return r;
    pthread_mutex_lock(&primary_lock);
    if (primary[dev].refs && (all || primary[dev].refs == 1)) {
        r = cuCtxDestroy(primary[dev].ctx);
        primary[dev].refs = 0;
    } else if (primary[dev].refs) {
        primary[dev].refs--;
    }
    pthread_mutex_unlock(&primary_lock);
    return r;
}

API CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    return deactivate(dev, 0);
}

API CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
    return deactivate(dev, 1);
}

API CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    CUresult r = check_device(dev);
    if (r)
        return r;
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&primary_lock);
    *flags = primary[dev].flags;
    *active = primary[dev].refs > 0;
    pthread_mutex_unlock(&primary_lock);
    return CUDA_SUCCESS;
}

API CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
    CUresult r = check_device(dev);
    if (!r)
        primary[dev].flags = flags; /* scheduling flags: libgdev spins, then blocks */
    return r;
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
