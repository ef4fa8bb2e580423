/* Device memory, pinned host memory, copies and memset over Gdev's verbs.  Pinned memory
 * (cuMemAllocHost/HostAlloc) is gmalloc_dma: copies from or to it are asynchronous, other
 * copies finish on return, as in Gdev. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

void cu_track_alloc(CUcontext c, uint64_t addr, uint64_t size, int managed)
{
    pthread_mutex_lock(&c->lock);
    if (c->nallocs == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        struct alloc *a = realloc(c->allocs, cap * sizeof *a);
        if (!a) {
            pthread_mutex_unlock(&c->lock);
            return; /* only cuMemGetAddressRange loses this allocation */
        }
        c->allocs = a;
        c->cap = cap;
    }
    c->allocs[c->nallocs++] = (struct alloc){addr, size, managed, cu_next_id(), 0};
    pthread_mutex_unlock(&c->lock);
}

/* 0 if addr starts no tracked allocation, 2 if it starts a managed one, else 1; removed
 * from the records when remove is nonzero. */
static int alloc_kind(CUcontext c, uint64_t addr, int remove)
{
    int found = 0;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->nallocs; i++)
        if (c->allocs[i].addr == addr) {
            found = c->allocs[i].managed ? 2 : 1;
            if (remove)
                c->allocs[i] = c->allocs[--c->nallocs];
            break;
        }
    pthread_mutex_unlock(&c->lock);
    return found;
}

int cu_untrack_alloc(CUcontext c, uint64_t addr)
{
    return alloc_kind(c, addr, 1);
}

int cu_is_managed(CUcontext c, uint64_t addr, uint64_t size)
{
    int yes = 0;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->nallocs && !yes; i++) {
        struct alloc a = c->allocs[i];
        yes = a.managed && addr >= a.addr && addr - a.addr <= a.size &&
              size <= a.size - (addr - a.addr);
    }
    pthread_mutex_unlock(&c->lock);
    return yes;
}


/* A failed gmalloc: the context's sticky error if a kernel of it faulted (the daemon refuses
 * every allocation after that, as CUDA does), else want of memory. */
static CUresult alloc_failure(CUcontext c, const char *call, size_t bytes)
{
    CUresult r = cu_poison(c, cu_error(-gdev_last_errno()));
    if (cu_kernel_fault(r))
        return r;
    return cu_fail(CUDA_ERROR_OUT_OF_MEMORY, "%s(%zu): %s", call, bytes, gdev_last_error());
}

API CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
    CURRENT(c);
    if (!dptr || !bytesize)
        return CUDA_ERROR_INVALID_VALUE;
    if (c->sticky)
        return c->sticky;
    uint64_t a = gmalloc(c->h, bytesize);
    if (!a)
        return alloc_failure(c, "cuMemAlloc", bytesize);
    cu_track_alloc(c, a, bytesize, 0);
    *dptr = a;
    return CUDA_SUCCESS;
}

API CUresult cuMemFree(CUdeviceptr dptr)
{
    CURRENT(c);
    if (!dptr)
        return CUDA_SUCCESS;
    if (c->sticky)
        return c->sticky;
    CUresult imported;
    if (cu_pool_import_free(c, dptr, &imported))
        return imported;
    int kind = alloc_kind(c, dptr, 0);
    if (!kind)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuMemFree: 0x%llx is not an allocation",
                       (unsigned long long)dptr);
    /* the records change only once the daemon has freed it: a refused free (a mapping of
     * cuMemMap, which cuMemUnmap undoes) leaves the range known to cuMemGetAddressRange */
    uint64_t freed = kind == 2 ? gfree_dma(c->h, (void *)(uintptr_t)dptr) : gfree(c->h, dptr);
    if (!freed) {
        CUresult r = cu_poison(c, cu_error(-gdev_last_errno()));
        return cu_kernel_fault(r) ? r : cu_fail(CUDA_ERROR_INVALID_VALUE, "%s",
                                                gdev_last_error());
    }
    cu_untrack_alloc(c, dptr);
    cu_pool_forget(c, dptr);
    if (kind == 2)
        cu_advice_forget(c, dptr);
    return CUDA_SUCCESS;
}

/* Managed memory is a pinned buffer mapped in this process at its own GPU address
 * (gmalloc_unified): one pointer for the host and for kernels, the same pages, so it is
 * coherent at every synchronization with nothing to migrate.  It is bounded as pinned memory
 * is (the vGPU's DMA share, pinned_per_session, 63 buffers a context: docs/clib.md). */
API CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    LIVE(c);
    if (!dptr || !bytesize || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
        return CUDA_ERROR_INVALID_VALUE;
    void *p = gmalloc_unified(c->h, bytesize);
    if (!p)
        return cu_fail(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAllocManaged(%zu): %s", bytesize,
                       gdev_last_error());
    cu_track_alloc(c, (uint64_t)(uintptr_t)p, bytesize, 1);
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

API CUresult cuMemGetAddressRange(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    CURRENT(c);
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->nallocs; i++) {
        struct alloc a = c->allocs[i];
        if (dptr >= a.addr && dptr < a.addr + a.size) {
            pthread_mutex_unlock(&c->lock);
            if (pbase)
                *pbase = a.addr;
            if (psize)
                *psize = a.size;
            return CUDA_SUCCESS;
        }
    }
    pthread_mutex_unlock(&c->lock);
    return CUDA_ERROR_NOT_FOUND;
}

API CUresult cuMemGetInfo(size_t *free_bytes, size_t *total)
{
    uint64_t f, t;
    CURRENT(c);
    if (!free_bytes || !total)
        return CUDA_ERROR_INVALID_VALUE;
    int err = gquery(c->h, GDEV_QUERY_DEVICE_MEM_FREE, &f);
    if (!err)
        err = gquery(c->h, GDEV_QUERY_DEVICE_MEM_SIZE, &t);
    if (err)
        return cu_error(err);
    *free_bytes = f;
    *total = t;
    return CUDA_SUCCESS;
}

API CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags)
{
    LIVE(c);
    if (!pp || !bytesize || (flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE |
                                                  CU_MEMHOSTALLOC_DEVICEMAP |
                                                  CU_MEMHOSTALLOC_WRITECOMBINED)))
        return CUDA_ERROR_INVALID_VALUE;
    /* PORTABLE: the buffer is the context's (its device pointer is that context's), and
     * every other context copies from and to it as from any host memory */
    *pp = gmalloc_dma(c->h, bytesize);
    if (!*pp)
        return cu_fail(CUDA_ERROR_OUT_OF_MEMORY, "%s", gdev_last_error());
    cu_host_track(c, *pp, bytesize, flags | CU_MEMHOSTALLOC_DEVICEMAP); /* always mapped */
    return CUDA_SUCCESS;
}

API CUresult cuMemAllocHost(void **pp, size_t bytesize)
{
    return cuMemHostAlloc(pp, bytesize, 0);
}

/* Freed through the context that allocated it (a portable buffer may be freed from another). */
API CUresult cuMemFreeHost(void *p)
{
    struct cu_host_info h;
    CURRENT(c);
    if (cu_host_find(p, 1, &h) && !h.registered && h.base == p)
        c = h.ctx;
    if (!gfree_dma(c->h, p))
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "%s", gdev_last_error());
    cu_host_untrack(p);
    return CUDA_SUCCESS;
}

/* Copies: a failed one of a faulted context is that context's sticky error, as every call
 * after a kernel's fault is in CUDA (the daemon checks before and after the copy waits for
 * its stream; gsync of fence 0 says at once whether the context faulted, which tells its
 * EFAULT from a range past its allocation: INVALID_VALUE, as in CUDA). */
static CUresult copy_result(CUcontext c, int err)
{
    struct gdev_time zero = {0, 0, 0};
    CUresult fault = cu_error(gsync(c->h, 0, &zero));
    if (cu_kernel_fault(fault)) /* the daemon's check_kernel_fault */
        return cu_poison(c, fault);
    return err == -EFAULT ? CUDA_ERROR_INVALID_VALUE
                          : cu_fail(cu_error(err), "%s", gdev_last_error());
}

static CUresult htod(CUstream s, CUdeviceptr dst, const void *src, size_t n, int async)
{
    uint32_t id = 0;
    STREAM_CTX(c, s); /* a copy runs on its stream's device, whatever is current */
    if (!n)
        return CUDA_SUCCESS;
    int err = async ? gstream_memcpy_to_device(c->h, cu_stream_id(s), dst, src, n, &id)
                    : gmemcpy_to_device(c->h, dst, src, n);
    if (err)
        return copy_result(c, err);
    if (id)
        *cu_stream_fence(c, s) = id;
    if (!async)
        cu_printf_flush(c); /* a blocking copy is a synchronization point */
    return CUDA_SUCCESS;
}

static CUresult dtoh(CUstream s, void *dst, CUdeviceptr src, size_t n, int async)
{
    uint32_t id = 0;
    STREAM_CTX(c, s); /* a copy runs on its stream's device, whatever is current */
    if (!n)
        return CUDA_SUCCESS;
    int err = async ? gstream_memcpy_from_device(c->h, cu_stream_id(s), dst, src, n, &id)
                    : gmemcpy_from_device(c->h, dst, src, n);
    if (err)
        return copy_result(c, err);
    if (id)
        *cu_stream_fence(c, s) = id;
    if (!async)
        cu_printf_flush(c); /* a blocking copy is a synchronization point */
    return CUDA_SUCCESS;
}

static CUresult dtod(CUstream s, CUdeviceptr dst, CUdeviceptr src, size_t n, int async)
{
    uint32_t id = 0;
    STREAM_CTX(c, s); /* a copy runs on its stream's device, whatever is current */
    if (!n)
        return CUDA_SUCCESS;
    int err = async ? gstream_memcpy(c->h, cu_stream_id(s), dst, src, n, &id)
                    : gmemcpy(c->h, dst, src, n);
    if (err)
        return copy_result(c, err);
    if (id)
        *cu_stream_fence(c, s) = id;
    if (!async)
        cu_printf_flush(c); /* a blocking copy is a synchronization point */
    return CUDA_SUCCESS;
}

API CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n)
{
    return htod(NULL, dst, src, n, 0);
}

API CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n)
{
    return dtoh(NULL, dst, src, n, 0);
}

API CUresult cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    return dtod(NULL, dst, src, n, 0);
}

API CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
    return htod(s, dst, src, n, 1);
}

API CUresult cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
    return dtoh(s, dst, src, n, 1);
}

API CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    return dtod(s, dst, src, n, 1);
}

/* Unified addressing: a pointer is device memory when it falls in one of our allocations. */
static int is_device(CUcontext c, CUdeviceptr p)
{
    int found = 0;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->nallocs && !found; i++)
        found = p >= c->allocs[i].addr && p < c->allocs[i].addr + c->allocs[i].size;
    pthread_mutex_unlock(&c->lock);
    return found;
}

static CUresult unified(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s, int async)
{
    CURRENT(c);
    int d = is_device(c, dst), h = is_device(c, src);
    if (d && h)
        return dtod(s, dst, src, n, async);
    if (d)
        return htod(s, dst, (const void *)(uintptr_t)src, n, async);
    if (h)
        return dtoh(s, (void *)(uintptr_t)dst, src, n, async);
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    return CUDA_SUCCESS;
}

API CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    return unified(dst, src, n, NULL, 0);
}

API CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    return unified(dst, src, n, s, 1);
}

/* The per-thread default-stream names of these entry points (cuda_internal.h). */
PTDS(cuMemcpyHtoD) PTDS(cuMemcpyDtoH) PTDS(cuMemcpyDtoD) PTSZ(cuMemcpyHtoDAsync)
PTSZ(cuMemcpyDtoHAsync) PTSZ(cuMemcpyDtoDAsync) PTDS(cuMemcpy) PTSZ(cuMemcpyAsync)
