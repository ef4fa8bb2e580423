/* Host-side calls of the runtime: registered host memory, pointer attributes, host functions
 * in stream order, limits, function attributes, occupancy, profiler markers. */
#include <stdint.h>
#include <string.h>

#include "cudart_internal.h"

#include <cudaProfiler.h>

/* Registered host memory and pointer attributes are libcuda's (hostmem.c, pointer.c). */
API cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
    IN_CTX();
    CALL(cuMemHostRegister(ptr, size, flags));
}

API cudaError_t cudaHostUnregister(void *ptr)
{
    IN_CTX();
    CALL(cuMemHostUnregister(ptr));
}

API cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *ptr)
{
    CUcontext ctx;
    CUpointer_attribute ids[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                 CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                 CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                 CU_POINTER_ATTRIBUTE_HOST_POINTER,
                                 CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    int type = 0, managed = 0, device = 0;
    CUdeviceptr dptr = 0;
    void *hptr = NULL, *out[] = {&type, &managed, &dptr, &hptr, &device};
    cudaError_t e = rt_ctx(&ctx);
    if (e)
        return e;
    if (!a)
        return rt_set(cudaErrorInvalidValue);
    e = rt_from(cuPointerGetAttributes(5, ids, out, (CUdeviceptr)(uintptr_t)ptr));
    if (e)
        return rt_set(e);
    *a = (struct cudaPointerAttributes){
        .type = managed ? cudaMemoryTypeManaged : type == CU_MEMORYTYPE_DEVICE
            ? cudaMemoryTypeDevice : type == CU_MEMORYTYPE_HOST ? cudaMemoryTypeHost
                                                                : cudaMemoryTypeUnregistered,
        .device = type ? device : rt_device(), .devicePointer = (void *)(uintptr_t)dptr,
        .hostPointer = type ? hptr : (void *)ptr};
    return cudaSuccess;
}

/* Host functions run when the stream's earlier work is done (libcuda's cuLaunchHostFunc). */
API cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void *data)
{
    CUcontext ctx;
    if (rt_capturing(s))
        return rt_set(rt_capture_host(s, fn, data));
    cudaError_t e = rt_ctx(&ctx);
    return e ? e : rt_set(rt_from(cuLaunchHostFunc(s, fn, data)));
}

API cudaError_t cudaStreamAddCallback(cudaStream_t s, cudaStreamCallback_t cb, void *data,
                                      unsigned int flags)
{
    if (flags || !cb)
        return rt_set(cudaErrorInvalidValue);
    cudaError_t e = cudaStreamSynchronize(s);
    cb(s, e, data);
    return cudaSuccess;
}

/* Limits are the context's (libcuda's cuCtxSetLimit: the device heap's size is the daemon's). */
API cudaError_t cudaDeviceSetLimit(enum cudaLimit limit, size_t value)
{
    IN_CTX();
    CALL(cuCtxSetLimit((CUlimit)limit, value));
}

API cudaError_t cudaDeviceGetLimit(size_t *value, enum cudaLimit limit)
{
    IN_CTX();
    CALL(cuCtxGetLimit(value, (CUlimit)limit));
}

API cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value)
{
    CUfunction fn;
    cudaError_t e = rt_function(func, &fn);
    if (e)
        return rt_set(e);
    return rt_set(rt_from(cuFuncSetAttribute(fn, (CUfunction_attribute)attr, value)));
}

API cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    int *n, const void *func, int block, size_t dynamic_shared, unsigned int flags)
{
    CUfunction fn;
    cudaError_t e = rt_function(func, &fn);
    if (e)
        return rt_set(e);
    /* libcuda's: the limit the daemon puts on a cooperative grid per multiprocessor */
    return rt_set(rt_from(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
        n, fn, block, dynamic_shared, flags)));
}

API cudaError_t cudaOccupancyAvailableDynamicSMemPerBlock(size_t *size, const void *func,
                                                          int blocks, int block)
{
    CUfunction fn;
    cudaError_t e = rt_function(func, &fn);
    if (e)
        return rt_set(e);
    CALL(cuOccupancyAvailableDynamicSMemPerBlock(size, fn, blocks, block));
}

API cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *n, const void *func,
                                                              int block, size_t dynamic_shared)
{
    return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(n, func, block,
                                                                  dynamic_shared, 0);
}

API cudaError_t cudaProfilerStart(void)
{
    IN_CTX();
    CALL(cuProfilerStart()); /* no profiler attaches */
}

API cudaError_t cudaProfilerStop(void)
{
    IN_CTX();
    CALL(cuProfilerStop());
}

/* ---- small queries and stream-ordered variants --------------------------------------- */

API cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned int flags)
{
    if (flags & ~(unsigned)cudaEventRecordExternal)
        return rt_set(cudaErrorInvalidValue);
    if (rt_capturing(s)) /* external: an event-record node; otherwise as cudaEventRecord */
        return rt_set(rt_capture_event(s, e, flags));
    return cudaEventRecord(e, s);
}

API cudaError_t cudaDeviceGetCacheConfig(enum cudaFuncCache *config)
{
    if (!config)
        return rt_set(cudaErrorInvalidValue);
    *config = cudaFuncCachePreferNone; /* one shared-memory configuration */
    return cudaSuccess;
}

API cudaError_t cudaGetDeviceFlags(unsigned int *flags)
{
    if (!flags)
        return rt_set(cudaErrorInvalidValue);
    *flags = cudaDeviceScheduleAuto; /* spin, then block: libgdev's waits */
    return cudaSuccess;
}

API cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest)
{
    IN_CTX();
    CALL(cuCtxGetStreamPriorityRange(least, greatest));
}

API cudaError_t cudaDeviceCanAccessPeer(int *can, int dev, int peer)
{
    int n;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e)
        return e;
    if (!can || dev < 0 || dev >= n || peer < 0 || peer >= n)
        return rt_set(cudaErrorInvalidDevice);
    *can = 0; /* each vGPU context is its own address space */
    return cudaSuccess;
}

API cudaError_t cudaInitDevice(int dev, unsigned int deviceFlags, unsigned int flags)
{
    CUcontext ctx;
    (void)deviceFlags, (void)flags;
    cudaError_t e = cudaSetDevice(dev);
    return e ? e : rt_ctx(&ctx);
}

API cudaError_t cudaStreamGetFlags(cudaStream_t s, unsigned int *flags)
{
    IN_CTX();
    CALL(cuStreamGetFlags(s, flags));
}

API cudaError_t cudaStreamGetPriority(cudaStream_t s, int *priority)
{
    IN_CTX();
    CALL(cuStreamGetPriority(s, priority));
}

API cudaError_t cudaStreamGetId(cudaStream_t s, unsigned long long *id)
{
    IN_CTX();
    CALL(cuStreamGetId(s, id));
}

API cudaError_t cudaStreamGetDevice(cudaStream_t s, int *device)
{
    IN_CTX();
    CALL(cuStreamGetDevice(s, device));
}

/* In the stream's order (libcuda's cuMemsetD2D8Async), or a memset node of a capture. */
API cudaError_t cudaMemset2DAsync(void *p, size_t pitch, int value, size_t width,
                                  size_t height, cudaStream_t s)
{
    CUcontext ctx;
    if (rt_capturing(s))
        return rt_set(rt_capture_memset2d(s, p, pitch, value, width, height));
    cudaError_t e = rt_ctx(&ctx);
    if (e)
        return e;
    if (width > pitch)
        return rt_set(cudaErrorInvalidPitchValue);
    return rt_set(rt_from(cuMemsetD2D8Async((CUdeviceptr)(uintptr_t)p, pitch,
                                            (unsigned char)value, width, height, s)));
}

/* What managed memory's hints say back (libcuda's cuMemRangeGetAttribute[s], managed.c). */
API cudaError_t cudaMemRangeGetAttribute(void *data, size_t size,
                                         enum cudaMemRangeAttribute attr, const void *p,
                                         size_t count)
{
    IN_CTX();
    CALL(cuMemRangeGetAttribute(data, size, (CUmem_range_attribute)attr,
                                                         (CUdeviceptr)(uintptr_t)p, count));
}

API cudaError_t cudaMemRangeGetAttributes(void **data, size_t *sizes,
                                          enum cudaMemRangeAttribute *attrs, size_t n,
                                          const void *p, size_t count)
{
    IN_CTX();
    CALL(cuMemRangeGetAttributes(data, sizes,
                                                          (CUmem_range_attribute *)attrs, n,
                                                          (CUdeviceptr)(uintptr_t)p, count));
}

/* The names nvcc --default-stream per-thread binds these by (cudart_internal.h). */
RT_PTSZ(cudaEventRecordWithFlags) RT_PTSZ(cudaLaunchHostFunc) RT_PTSZ(cudaMemset2DAsync)
RT_PTSZ(cudaStreamAddCallback) RT_PTSZ(cudaStreamGetDevice) RT_PTSZ(cudaStreamGetFlags)
RT_PTSZ(cudaStreamGetId) RT_PTSZ(cudaStreamGetPriority)
