/* Stream-ordered allocation and memory pools: libcuda's (cuMemPool*, cuMemAllocAsync:
 * libgdev/csrc/cuda/pool.c), as NVIDIA's runtime calls its driver; cudaMemPool_t is the
 * driver's CUmemoryPool and the property, attribute and access types are the driver's.
 * What the runtime adds: a pool of another device allocates in that device's primary
 * context, and a capturing stream records graph allocations instead (graph_mem.c). */
#include <stdint.h>

#include "cudart_internal.h"


API cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *pool, int dev)
{
    cudaError_t e = rt_valid_device(dev);
    if (e)
        return rt_set(e);
    CALL(cuDeviceGetDefaultMemPool(pool, dev));
}

API cudaError_t cudaDeviceGetMemPool(cudaMemPool_t *pool, int dev)
{
    cudaError_t e = rt_valid_device(dev);
    if (e)
        return rt_set(e);
    CALL(cuDeviceGetMemPool(pool, dev));
}

API cudaError_t cudaDeviceSetMemPool(int dev, cudaMemPool_t pool)
{
    cudaError_t e = rt_valid_device(dev);
    if (e)
        return rt_set(e);
    CALL(cuDeviceSetMemPool(dev, pool));
}

/* CUDA 13's pools by memory location (a device, or the host for pinned pools), libcuda's. */
API cudaError_t cudaMemGetDefaultMemPool(cudaMemPool_t *pool, struct cudaMemLocation *loc,
                                         enum cudaMemAllocationType type)
{
    IN_CTX();
    CALL(cuMemGetDefaultMemPool(pool, (CUmemLocation *)loc, (CUmemAllocationType)type));
}

API cudaError_t cudaMemGetMemPool(cudaMemPool_t *pool, struct cudaMemLocation *loc,
                                  enum cudaMemAllocationType type)
{
    IN_CTX();
    CALL(cuMemGetMemPool(pool, (CUmemLocation *)loc, (CUmemAllocationType)type));
}

API cudaError_t cudaMemSetMemPool(struct cudaMemLocation *loc, enum cudaMemAllocationType type,
                                  cudaMemPool_t pool)
{
    IN_CTX();
    CALL(cuMemSetMemPool((CUmemLocation *)loc, (CUmemAllocationType)type, pool));
}

API cudaError_t cudaMemPoolCreate(cudaMemPool_t *pool, const struct cudaMemPoolProps *props)
{
    int n;
    cudaError_t e = cudaGetDeviceCount(&n); /* the driver initialized */
    if (e)
        return e;
    CALL(cuMemPoolCreate(pool, (const CUmemPoolProps *)props));
}

API cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool)
{
    CALL(cuMemPoolDestroy(pool));
}

/* The device whose memory the pool holds: the one with read-write access to it. */
static int pool_device(cudaMemPool_t pool)
{
    int n = 0;
    cudaGetDeviceCount(&n);
    for (int dev = 0; dev < n; dev++) {
        CUmemLocation loc = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev};
        CUmemAccess_flags flags;
        if (!cuMemPoolGetAccess(&flags, pool, &loc) && flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return dev;
    }
    return -1;
}

API cudaError_t cudaMallocFromPoolAsync(void **p, size_t size, cudaMemPool_t pool,
                                        cudaStream_t s)
{
    CUcontext ctx;
    CUdeviceptr d = 0;
    if (!p || !pool)
        return rt_set(cudaErrorInvalidValue);
    int dev = pool_device(pool), cur = rt_device();
    if (dev < 0)
        return rt_set(cudaErrorInvalidValue);
    if (rt_capturing(s)) /* a graph allocation */
        return rt_set(dev == cur ? rt_capture_alloc(s, size, p) : cudaErrorInvalidDevice);
    cudaError_t e = dev == cur ? cudaSuccess : cudaSetDevice(dev);
    if (!e && !(e = rt_ctx(&ctx)))
        e = rt_from(cuMemAllocFromPoolAsync(&d, size, pool, dev == cur ? s : NULL));
    if (dev != cur)
        cudaSetDevice(cur);
    *p = (void *)(uintptr_t)d;
    return rt_set(e);
}

API cudaError_t cudaMallocAsync(void **p, size_t size, cudaStream_t s)
{
    cudaMemPool_t pool;
    cudaError_t e = cudaDeviceGetMemPool(&pool, rt_device());
    return e ? e : cudaMallocFromPoolAsync(p, size, pool, s);
}

API cudaError_t cudaFreeAsync(void *p, cudaStream_t s)
{
    CUcontext ctx;
    if (rt_capturing(s))
        return rt_set(rt_capture_free(s, p));
    if (rt_gmem_owned(p)) /* back to its graph, which keeps it for the next launch */
        return cudaSuccess;
    cudaError_t e = rt_ctx(&ctx);
    if (e)
        return e;
    CALL(cuMemFreeAsync((CUdeviceptr)(uintptr_t)p, s));
}

API cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t keep)
{
    CALL(cuMemPoolTrimTo(pool, keep));
}

API cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr,
                                        void *value)
{
    CALL(cuMemPoolSetAttribute(pool, (CUmemPool_attribute)attr, value));
}

API cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr,
                                        void *value)
{
    CALL(cuMemPoolGetAttribute(pool, (CUmemPool_attribute)attr, value));
}

API cudaError_t cudaMemPoolSetAccess(cudaMemPool_t pool, const struct cudaMemAccessDesc *d,
                                     size_t count)
{
    CALL(cuMemPoolSetAccess(pool, (const CUmemAccessDesc *)d, count));
}

API cudaError_t cudaMemPoolGetAccess(enum cudaMemAccessFlags *flags, cudaMemPool_t pool,
                                     struct cudaMemLocation *loc)
{
    CALL(cuMemPoolGetAccess((CUmemAccess_flags *)flags, pool, (CUmemLocation *)loc));
}

/* Pools shared between processes (libcuda's poolipc.c): a POSIX file descriptor for the
 * pool, 64 bytes of export data for each pointer. */
API cudaError_t cudaMemPoolExportToShareableHandle(void *handle, cudaMemPool_t pool,
                                                   enum cudaMemAllocationHandleType type,
                                                   unsigned int flags)
{
    CALL(cuMemPoolExportToShareableHandle(handle, pool, (CUmemAllocationHandleType)type, flags));
}

API cudaError_t cudaMemPoolImportFromShareableHandle(cudaMemPool_t *pool, void *handle,
                                                     enum cudaMemAllocationHandleType type,
                                                     unsigned int flags)
{
    int n;
    cudaError_t e = cudaGetDeviceCount(&n); /* the driver initialized */
    if (e)
        return e;
    CALL(cuMemPoolImportFromShareableHandle(pool, handle, (CUmemAllocationHandleType)type,
                                            flags));
}

API cudaError_t cudaMemPoolExportPointer(struct cudaMemPoolPtrExportData *data, void *ptr)
{
    IN_CTX();
    CALL(cuMemPoolExportPointer((CUmemPoolPtrExportData *)data, (CUdeviceptr)(uintptr_t)ptr));
}

API cudaError_t cudaMemPoolImportPointer(void **ptr, cudaMemPool_t pool,
                                         struct cudaMemPoolPtrExportData *data)
{
    CUdeviceptr d = 0;
    if (!ptr)
        return rt_set(cudaErrorInvalidValue);
    IN_CTX();
    cudaError_t e = rt_from(cuMemPoolImportPointer(&d, pool, (CUmemPoolPtrExportData *)data));
    *ptr = (void *)(uintptr_t)d;
    return rt_set(e);
}

/* The names nvcc --default-stream per-thread binds these by (cudart_internal.h). */
RT_PTSZ(cudaFreeAsync) RT_PTSZ(cudaMallocAsync) RT_PTSZ(cudaMallocFromPoolAsync)
