/* Stream-ordered allocation and memory pools.  Each device has a default pool (and a current
 * pool, cudaDeviceSetMemPool); cudaMallocAsync allocates from the current pool,
 * cudaMallocFromPoolAsync from the one given.  A pool here caches nothing: an allocation is
 * made when asked (so it is ready before the stream's later work) and returned to the device
 * when freed (cudaFreeAsync waits for the stream first), so reserved memory equals used
 * memory, the release threshold never holds memory back and cudaMemPoolTrimTo has nothing to
 * release.  The attributes are kept and reported as CUDA defines them, with the pool's
 * current and high-water use counted from its live allocations. */
#include <stdint.h>
#include <stdlib.h>

#include "cudart_internal.h"

struct CUmemPoolHandle_st {
    int device;
    int is_default;
    int reuse[3]; /* cudaMemPoolReuse{FollowEventDependencies,AllowOpportunistic,
                     AllowInternalDependencies} */
    uint64_t threshold, used, used_high, reserved_high;
};

/* A live allocation from a pool (for the pool's accounting when it is freed). */
struct pooled {
    void *p;
    size_t size;
    struct CUmemPoolHandle_st *pool;
    struct pooled *next;
};

static struct CUmemPoolHandle_st defaults[MAX_DEVICES];
static struct CUmemPoolHandle_st *current[MAX_DEVICES];
static struct pooled *live;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static struct CUmemPoolHandle_st *default_pool(int dev) /* under lock */
{
    struct CUmemPoolHandle_st *p = &defaults[dev];
    if (!p->is_default)
        *p = (struct CUmemPoolHandle_st){.device = dev, .is_default = 1, .reuse = {1, 1, 1}};
    return p;
}

/* dev's default pool, or its current one (the default unless set) when `current_one`. */
static cudaError_t get_pool(cudaMemPool_t *pool, int dev, int current_one)
{
    cudaError_t e = rt_valid_device(dev);
    if (!e && !pool)
        e = cudaErrorInvalidValue;
    if (e)
        return rt_set(e);
    pthread_mutex_lock(&lock);
    *pool = current_one && current[dev] ? current[dev] : default_pool(dev);
    pthread_mutex_unlock(&lock);
    return cudaSuccess;
}

API cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *pool, int dev)
{
    return get_pool(pool, dev, 0);
}

API cudaError_t cudaDeviceGetMemPool(cudaMemPool_t *pool, int dev)
{
    return get_pool(pool, dev, 1);
}

API cudaError_t cudaDeviceSetMemPool(int dev, cudaMemPool_t pool)
{
    cudaError_t e = rt_valid_device(dev);
    if (!e && !pool)
        e = cudaErrorInvalidValue;
    if (!e && pool->device != dev)
        e = cudaErrorInvalidDevice;
    if (e)
        return rt_set(e);
    pthread_mutex_lock(&lock);
    current[dev] = pool;
    pthread_mutex_unlock(&lock);
    return cudaSuccess;
}

API cudaError_t cudaMemPoolCreate(cudaMemPool_t *pool, const struct cudaMemPoolProps *props)
{
    if (!pool || !props || props->allocType != cudaMemAllocationTypePinned
        || props->location.type != cudaMemLocationTypeDevice)
        return rt_set(cudaErrorInvalidValue);
    cudaError_t e = rt_valid_device(props->location.id);
    if (e)
        return rt_set(e);
    if (props->handleTypes != cudaMemHandleTypeNone)
        return rt_set(cudaErrorNotSupported); /* no sharing between processes */
    struct CUmemPoolHandle_st *p = calloc(1, sizeof *p);
    if (!p)
        return rt_set(cudaErrorMemoryAllocation);
    *p = (struct CUmemPoolHandle_st){.device = props->location.id, .reuse = {1, 1, 1}};
    *pool = p;
    return cudaSuccess;
}

/* A device's default pool is not destroyed; a pool that is some device's current one stops
 * being it.  Allocations still live stay valid (freed with cudaFreeAsync or cudaFree). */
API cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool)
{
    if (!pool || pool->is_default)
        return rt_set(cudaErrorInvalidValue);
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_DEVICES; i++)
        current[i] = current[i] == pool ? NULL : current[i];
    for (struct pooled *q = live; q; q = q->next)
        q->pool = q->pool == pool ? NULL : q->pool;
    pthread_mutex_unlock(&lock);
    free(pool);
    return cudaSuccess;
}

static cudaError_t pool_alloc(void **p, size_t size, struct CUmemPoolHandle_st *pool)
{
    int cur = rt_device();
    struct pooled *q = malloc(sizeof *q);
    if (!q)
        return rt_set(cudaErrorMemoryAllocation);
    cudaError_t e = pool->device == cur ? cudaSuccess : cudaSetDevice(pool->device);
    if (!e)
        e = cudaMalloc(p, size);
    if (pool->device != cur)
        cudaSetDevice(cur);
    if (e) {
        free(q);
        return e;
    }
    pthread_mutex_lock(&lock);
    *q = (struct pooled){*p, size, pool, live};
    live = q;
    pool->used += size;
    pool->used_high = pool->used > pool->used_high ? pool->used : pool->used_high;
    pool->reserved_high = pool->used > pool->reserved_high ? pool->used : pool->reserved_high;
    pthread_mutex_unlock(&lock);
    return cudaSuccess;
}

API cudaError_t cudaMallocFromPoolAsync(void **p, size_t size, cudaMemPool_t pool,
                                        cudaStream_t s)
{
    if (!p || !pool)
        return rt_set(cudaErrorInvalidValue);
    if (rt_capturing(s)) /* a graph allocation */
        return rt_set(pool->device == rt_device() ? rt_capture_alloc(s, size, p)
                                                  : cudaErrorInvalidDevice);
    return pool_alloc(p, size, pool); /* now: ready before anything later in the stream */
}

API cudaError_t cudaMallocAsync(void **p, size_t size, cudaStream_t s)
{
    cudaMemPool_t pool;
    cudaError_t e = cudaDeviceGetMemPool(&pool, rt_device());
    return e ? e : cudaMallocFromPoolAsync(p, size, pool, s);
}

API cudaError_t cudaFreeAsync(void *p, cudaStream_t s)
{
    if (rt_capturing(s))
        return rt_set(rt_capture_free(s, p));
    if (rt_gmem_owned(p)) /* back to its graph, which keeps it for the next launch */
        return cudaSuccess;
    cudaError_t e = cudaStreamSynchronize(s); /* the stream's earlier work may still use p */
    if (e)
        return e;
    pthread_mutex_lock(&lock);
    for (struct pooled **q = &live; *q; q = &(*q)->next)
        if ((*q)->p == p) {
            struct pooled *gone = *q;
            if (gone->pool)
                gone->pool->used -= gone->size;
            *q = gone->next;
            free(gone);
            break;
        }
    pthread_mutex_unlock(&lock);
    return cudaFree(p);
}

API cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t keep)
{
    (void)keep; /* nothing is cached beyond live allocations */
    return pool ? cudaSuccess : rt_set(cudaErrorInvalidValue);
}

/* The high-water marks can only be reset (to the current use), by writing 0. */
API cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr,
                                        void *value)
{
    cudaError_t e = cudaSuccess;
    if (!pool || !value)
        return rt_set(cudaErrorInvalidValue);
    pthread_mutex_lock(&lock);
    const uint64_t *v64 = value; /* read only for the 64-bit attributes */
    switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies:
    case cudaMemPoolReuseAllowOpportunistic:
    case cudaMemPoolReuseAllowInternalDependencies:
        pool->reuse[attr - cudaMemPoolReuseFollowEventDependencies] = *(int *)value != 0;
        break;
    case cudaMemPoolAttrReleaseThreshold: pool->threshold = *v64; break;
    case cudaMemPoolAttrReservedMemHigh:
    case cudaMemPoolAttrUsedMemHigh:
        if (*v64)
            e = cudaErrorInvalidValue;
        else if (attr == cudaMemPoolAttrUsedMemHigh)
            pool->used_high = pool->used;
        else
            pool->reserved_high = pool->used;
        break;
    default: e = cudaErrorInvalidValue; /* read-only or unknown */
    }
    pthread_mutex_unlock(&lock);
    return rt_set(e);
}

API cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr,
                                        void *value)
{
    cudaError_t e = cudaSuccess;
    if (!pool || !value)
        return rt_set(cudaErrorInvalidValue);
    pthread_mutex_lock(&lock);
    uint64_t *v64 = value;
    switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies:
    case cudaMemPoolReuseAllowOpportunistic:
    case cudaMemPoolReuseAllowInternalDependencies:
        *(int *)value = pool->reuse[attr - cudaMemPoolReuseFollowEventDependencies];
        break;
    case cudaMemPoolAttrReleaseThreshold: *v64 = pool->threshold; break;
    case cudaMemPoolAttrReservedMemCurrent: /* reserved = used: nothing cached */
    case cudaMemPoolAttrUsedMemCurrent: *v64 = pool->used; break;
    case cudaMemPoolAttrReservedMemHigh: *v64 = pool->reserved_high; break;
    case cudaMemPoolAttrUsedMemHigh: *v64 = pool->used_high; break;
    default: e = cudaErrorInvalidValue;
    }
    pthread_mutex_unlock(&lock);
    return rt_set(e);
}

/* Only the pool's own device reaches its memory (no peer access between vGPUs). */
API cudaError_t cudaMemPoolSetAccess(cudaMemPool_t pool, const struct cudaMemAccessDesc *d,
                                     size_t count)
{
    if (!pool || (count && !d))
        return rt_set(cudaErrorInvalidValue);
    for (size_t i = 0; i < count; i++) {
        if (d[i].location.type != cudaMemLocationTypeDevice
            || d[i].flags > cudaMemAccessFlagsProtReadWrite)
            return rt_set(cudaErrorInvalidValue);
        cudaError_t e = rt_valid_device(d[i].location.id);
        if (e)
            return rt_set(e);
        if (d[i].location.id == pool->device ? d[i].flags != cudaMemAccessFlagsProtReadWrite
                                             : d[i].flags != cudaMemAccessFlagsProtNone)
            return rt_set(cudaErrorNotSupported);
    }
    return cudaSuccess;
}

API cudaError_t cudaMemPoolGetAccess(enum cudaMemAccessFlags *flags, cudaMemPool_t pool,
                                     struct cudaMemLocation *loc)
{
    if (!flags || !pool || !loc || loc->type != cudaMemLocationTypeDevice)
        return rt_set(cudaErrorInvalidValue);
    cudaError_t e = rt_valid_device(loc->id);
    if (e)
        return rt_set(e);
    *flags = loc->id == pool->device ? cudaMemAccessFlagsProtReadWrite
                                     : cudaMemAccessFlagsProtNone;
    return cudaSuccess;
}
