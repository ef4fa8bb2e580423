/* Context-local storage: NVIDIA's static runtime keeps its state of each context under a key
 * of its own in the driver (export.c hands it these calls), and is told through the entry's
 * destructor when the context goes, so that a later context at the same address starts
 * afresh (cudaDeviceReset resets the primary context, whose handle stays the same). */
#include <stdlib.h>

#include "cuda_internal.h"

struct cls_entry {
    void *key, *value;
    void (*dtor)(CUcontext, void *, void *);
};

/* ctx, or the calling thread's current context for NULL; locked when SUCCESS. */
static CUresult lock_target(CUcontext *ctx)
{
    if (!*ctx) {
        CUresult r = cu_current(ctx);
        if (r)
            return r;
    }
    if ((*ctx)->destroyed)
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    pthread_mutex_lock(&(*ctx)->lock);
    return CUDA_SUCCESS;
}

static struct cls_entry *find(CUcontext ctx, void *key)
{
    for (size_t i = 0; i < ctx->ncls; i++)
        if (ctx->cls[i].key == key)
            return &ctx->cls[i];
    return NULL;
}

/* key's entry of *ctx (NULL if it has none), with *ctx locked when SUCCESS. */
static CUresult lock_entry(CUcontext *ctx, void *key, struct cls_entry **e)
{
    CUresult r = lock_target(ctx);
    if (!r)
        *e = find(*ctx, key);
    return r;
}

CUresult cu_cls_put(CUcontext ctx, void *key, void *value,
                    void (*dtor)(CUcontext, void *, void *))
{
    struct cls_entry *e = NULL;
    CUresult r = lock_entry(&ctx, key, &e);
    if (r)
        return r;
    if (!e) {
        e = realloc(ctx->cls, (ctx->ncls + 1) * sizeof *e);
        if (e) {
            ctx->cls = e;
            e = &ctx->cls[ctx->ncls++];
            e->key = key;
        }
    }
    if (e) {
        e->value = value;
        e->dtor = dtor;
    }
    pthread_mutex_unlock(&ctx->lock);
    return e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cu_cls_delete(CUcontext ctx, void *key)
{
    struct cls_entry *e = NULL;
    CUresult r = lock_entry(&ctx, key, &e);
    if (r)
        return r;
    if (e)
        *e = ctx->cls[--ctx->ncls];
    pthread_mutex_unlock(&ctx->lock);
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cu_cls_get(void **value, CUcontext ctx, void *key)
{
    struct cls_entry *e = NULL;
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = lock_entry(&ctx, key, &e);
    if (r)
        return r;
    if (e)
        *value = e->value;
    pthread_mutex_unlock(&ctx->lock);
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

void cu_cls_release(CUcontext ctx)
{
    pthread_mutex_lock(&ctx->lock);
    struct cls_entry *all = ctx->cls;
    size_t n = ctx->ncls;
    ctx->cls = NULL;
    ctx->ncls = 0;
    pthread_mutex_unlock(&ctx->lock);
    /* outside the lock: a destructor may call the driver about this context */
    for (size_t i = 0; i < n; i++)
        if (all[i].dtor)
            all[i].dtor(ctx, all[i].key, all[i].value);
    free(all);
}
