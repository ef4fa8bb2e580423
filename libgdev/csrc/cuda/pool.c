/* Stream-ordered allocation and memory pools (cuMemAllocAsync, cuMemPool*).  Each device
 * has a default pool and a current pool (cuDeviceSetMemPool).  A pool here caches nothing:
 * an allocation is made when asked (so it is ready before the stream's later work) and
 * returned to the device when freed (cuMemFreeAsync waits for the stream first), so reserved
 * memory equals used memory, the release threshold never holds memory back and
 * cuMemPoolTrimTo has nothing to release.  A pool's maxSize is enforced.  The attributes
 * are kept and reported as CUDA defines them, the current and high-water use counted from
 * the pool's live allocations.  Only the pool's own device reaches its memory (no peer
 * access between vGPUs).  A pool created with a POSIX file descriptor handle type is shared
 * with other processes through poolipc.c. */
#include <stdlib.h>
#include <sys/random.h>

#include "pool.h"

#define MAX_DEVICES 64

/* A live allocation from a pool (for the pool's accounting when it is freed). */
struct pooled {
    CUcontext ctx;
    CUdeviceptr p;
    size_t size;
    struct CUmemPoolHandle_st *pool;
    struct pooled *next;
};

static struct CUmemPoolHandle_st defaults[MAX_DEVICES];
static struct CUmemPoolHandle_st *current[MAX_DEVICES];
static struct pooled *live;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* A device of the driver with a slot in the tables above. */
static CUresult valid_device(CUdevice dev)
{
    CUresult r = cu_valid_device(dev);
    return r ? r : dev >= MAX_DEVICES ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
}

static struct CUmemPoolHandle_st *default_pool(int dev) /* under lock */
{
    struct CUmemPoolHandle_st *p = &defaults[dev];
    if (!p->is_default)
        *p = (struct CUmemPoolHandle_st){.device = dev, .is_default = 1, .reuse = {1, 1, 1}};
    return p;
}

static CUresult get_pool(CUmemoryPool *pool, CUdevice dev, int current_one)
{
    CUresult r = valid_device(dev);
    if (r || !pool)
        return r ? r : CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    *pool = current_one && current[dev] ? current[dev] : default_pool(dev);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev)
{
    return get_pool(pool, dev, 0);
}

API CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    return get_pool(pool, dev, 1);
}

API CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    CUresult r = valid_device(dev);
    if (r || !pool)
        return r ? r : CUDA_ERROR_INVALID_VALUE;
    if (pool->device != dev)
        return CUDA_ERROR_INVALID_DEVICE;
    if (pool->imported)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuDeviceSetMemPool: an imported pool makes "
                       "no allocations");
    pthread_mutex_lock(&lock);
    current[dev] = pool;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

/* CUDA 13's forms by location: device pools of pinned device memory only (no host or
 * managed pools here). */
static CUresult device_of(const CUmemLocation *loc, CUmemAllocationType type, CUdevice *dev)
{
    if (!loc)
        return CUDA_ERROR_INVALID_VALUE;
    if (loc->type != CU_MEM_LOCATION_TYPE_DEVICE || type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "memory pools of device memory only");
    *dev = loc->id;
    return CUDA_SUCCESS;
}

API CUresult cuMemGetDefaultMemPool(CUmemoryPool *pool, CUmemLocation *loc,
                                    CUmemAllocationType type)
{
    CUdevice dev = 0;
    CUresult r = device_of(loc, type, &dev);
    return r ? r : get_pool(pool, dev, 0);
}

API CUresult cuMemGetMemPool(CUmemoryPool *pool, CUmemLocation *loc, CUmemAllocationType type)
{
    CUdevice dev = 0;
    CUresult r = device_of(loc, type, &dev);
    return r ? r : get_pool(pool, dev, 1);
}

API CUresult cuMemSetMemPool(CUmemLocation *loc, CUmemAllocationType type, CUmemoryPool pool)
{
    CUdevice dev = 0;
    CUresult r = device_of(loc, type, &dev);
    return r ? r : cuDeviceSetMemPool(dev, pool);
}

API CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    if (!pool || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        props->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = valid_device(props->location.id);
    if (r)
        return r;
    if (props->handleTypes & ~CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "cuMemPoolCreate: pools are shared between "
                       "processes through POSIX file descriptors only");
    struct CUmemPoolHandle_st *p = calloc(1, sizeof *p);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *p = (struct CUmemPoolHandle_st){.device = props->location.id, .reuse = {1, 1, 1},
                                     .max_size = props->maxSize,
                                     .handle_types = props->handleTypes};
    if (p->handle_types && getrandom(p->token, sizeof p->token, 0) != sizeof p->token) {
        free(p);
        return cu_fail(CUDA_ERROR_OPERATING_SYSTEM, "cuMemPoolCreate: no random bytes for "
                       "the pool's identity");
    }
    *pool = p;
    return CUDA_SUCCESS;
}

/* A device's default pool is not destroyed; a pool that is some device's current one stops
 * being it.  Allocations still live stay valid (freed with cuMemFreeAsync or cuMemFree). */
API CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    if (!pool || pool->is_default)
        return CUDA_ERROR_INVALID_VALUE;
    cu_pool_imports_forget(pool);
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_DEVICES; i++)
        current[i] = current[i] == pool ? NULL : current[i];
    for (struct pooled *q = live; q; q = q->next)
        q->pool = q->pool == pool ? NULL : q->pool;
    pthread_mutex_unlock(&lock);
    free(pool);
    return CUDA_SUCCESS;
}

static CUresult pool_alloc(CUdeviceptr *p, size_t size, struct CUmemPoolHandle_st *pool)
{
    CUcontext c = NULL;
    CUresult r = cu_live(&c);
    if (r)
        return r;
    if (pool->imported)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "an imported pool makes no allocations (they "
                       "come from its exporting process: cuMemPoolImportPointer)");
    if (pool->device != c->dev)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "a pool of device %d cannot allocate for "
                       "device %d (no peer access between vGPUs)", pool->device, c->dev);
    if (pool->max_size && size > pool->max_size - (pool->used < pool->max_size ? pool->used
                                                                              : pool->max_size))
        return cu_fail(CUDA_ERROR_OUT_OF_MEMORY, "the pool's maxSize (%llu bytes) is reached",
                       (unsigned long long)pool->max_size);
    struct pooled *q = malloc(sizeof *q);
    if (!q)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if ((r = cuMemAlloc(p, size))) {
        free(q);
        return r;
    }
    pthread_mutex_lock(&lock);
    *q = (struct pooled){c, *p, size, pool, live};
    live = q;
    pool->used += size;
    pool->used_high = pool->used > pool->used_high ? pool->used : pool->used_high;
    pool->reserved_high = pool->used > pool->reserved_high ? pool->used : pool->reserved_high;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

API CUresult cuMemAllocFromPoolAsync(CUdeviceptr *p, size_t size, CUmemoryPool pool,
                                     CUstream s)
{
    (void)s; /* allocated now: ready before anything later in the stream */
    if (!p || !pool || !size)
        return CUDA_ERROR_INVALID_VALUE;
    return pool_alloc(p, size, pool);
}

API CUresult cuMemAllocAsync(CUdeviceptr *p, size_t size, CUstream s)
{
    CUmemoryPool pool;
    CUcontext c = NULL;
    CUresult r = cu_current(&c);
    if (!r)
        r = cuDeviceGetMemPool(&pool, c->dev);
    return r ? r : cuMemAllocFromPoolAsync(p, size, pool, s);
}

/* Drop the blocks of c at p (every block of c if p is 0) from their pools. */
void cu_pool_forget(CUcontext c, CUdeviceptr p)
{
    pthread_mutex_lock(&lock);
    for (struct pooled **q = &live; *q;) {
        struct pooled *gone = *q;
        if (gone->ctx != c || (p && gone->p != p)) {
            q = &gone->next;
            continue;
        }
        if (gone->pool)
            gone->pool->used -= gone->size;
        *q = gone->next;
        free(gone);
    }
    pthread_mutex_unlock(&lock);
}

CUmemoryPool cu_pool_of(CUcontext c, CUdeviceptr base)
{
    CUmemoryPool pool = NULL;
    pthread_mutex_lock(&lock);
    for (struct pooled *q = live; q && !pool; q = q->next)
        pool = q->p == base && q->ctx == c ? q->pool : NULL;
    pthread_mutex_unlock(&lock);
    return pool ? pool : cu_pool_import_of(c, base);
}

/* The stream's earlier work may still use p: it is freed once that is done. */
API CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
    CUresult r = cuStreamSynchronize(s);
    return r ? r : cuMemFree(p);
}

API CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep)
{
    (void)keep; /* nothing is cached beyond live allocations */
    return pool ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* The high-water marks can only be reset (to the current use), by writing 0. */
API CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    CUresult r = CUDA_SUCCESS;
    if (!pool || !value)
        return CUDA_ERROR_INVALID_VALUE;
    const cuuint64_t *v64 = value; /* read only for the 64-bit attributes */
    pthread_mutex_lock(&lock);
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        pool->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES] = *(int *)value != 0;
        break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: pool->threshold = *v64; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        if (*v64)
            r = CUDA_ERROR_INVALID_VALUE;
        else if (attr == CU_MEMPOOL_ATTR_USED_MEM_HIGH)
            pool->used_high = pool->used;
        else
            pool->reserved_high = pool->used;
        break;
    default: r = CUDA_ERROR_INVALID_VALUE; /* read-only or unknown */
    }
    pthread_mutex_unlock(&lock);
    return r;
}

API CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    CUresult r = CUDA_SUCCESS;
    if (!pool || !value)
        return CUDA_ERROR_INVALID_VALUE;
    cuuint64_t *v64 = value;
    pthread_mutex_lock(&lock);
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        *(int *)value = pool->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES];
        break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: *v64 = pool->threshold; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: /* reserved = used: nothing cached */
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *v64 = pool->used; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: *v64 = pool->reserved_high; break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: *v64 = pool->used_high; break;
    default: r = CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

/* The pool's own device has read-write access, which cannot be taken away; other devices
 * can only be denied it. */
API CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *d, size_t count)
{
    if (!pool || (count && !d))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        if (d[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
            d[i].flags > CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return CUDA_ERROR_INVALID_VALUE;
        CUresult r = valid_device(d[i].location.id);
        if (r)
            return r;
        if (d[i].location.id == pool->device ? d[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                                             : d[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE)
            return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "cuMemPoolSetAccess: only the pool's "
                           "device reaches its memory, read-write");
    }
    return CUDA_SUCCESS;
}

API CUresult cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool pool,
                                CUmemLocation *loc)
{
    if (!flags || !pool || !loc || loc->type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = valid_device(loc->id);
    if (r)
        return r;
    *flags = loc->id == pool->device ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                                     : CU_MEM_ACCESS_FLAGS_PROT_NONE;
    return CUDA_SUCCESS;
}

/* The per-thread default-stream names of these entry points (cuda_internal.h). */
PTSZ(cuMemFreeAsync) PTSZ(cuMemAllocAsync) PTSZ(cuMemAllocFromPoolAsync)
