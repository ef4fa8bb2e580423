/* Host-side calls of the runtime: registered host memory, pointer attributes, host functions
 * in stream order, limits, function attributes, occupancy, profiler markers. */
#include <stdint.h>
#include <string.h>

#include "cudart_internal.h"

API cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
    (void)flags;
    /* Page-locking only speeds copies up; here every host buffer is copied through the
     * staging buffer either way, so a registered buffer behaves as CUDA promises. */
    return ptr && size ? cudaSuccess : rt_set(cudaErrorInvalidValue);
}

API cudaError_t cudaHostUnregister(void *ptr)
{
    return ptr ? cudaSuccess : rt_set(cudaErrorInvalidValue);
}

API cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *ptr)
{
    CUcontext ctx;
    CUdeviceptr base, dptr;
    size_t size;
    cudaError_t e = rt_ctx(&ctx);
    if (e)
        return e;
    if (!a)
        return rt_set(cudaErrorInvalidValue);
    memset(a, 0, sizeof *a);
    a->device = rt_device();
    if (cuMemGetAddressRange(&base, &size, (CUdeviceptr)(uintptr_t)ptr) == CUDA_SUCCESS) {
        /* managed memory is also a pinned buffer, mapped at its own device address */
        int managed = cuMemHostGetDevicePointer(&dptr, (void *)ptr, 0) == CUDA_SUCCESS;
        a->type = managed ? cudaMemoryTypeManaged : cudaMemoryTypeDevice;
        a->devicePointer = (void *)ptr;
        a->hostPointer = managed ? (void *)ptr : NULL;
    } else if (cuMemHostGetDevicePointer(&dptr, (void *)ptr, 0) == CUDA_SUCCESS) {
        a->type = cudaMemoryTypeHost;
        a->hostPointer = (void *)ptr;
        a->devicePointer = (void *)(uintptr_t)dptr;
    } else {
        a->type = cudaMemoryTypeUnregistered;
        a->hostPointer = (void *)ptr;
    }
    return cudaSuccess;
}

API cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void *data)
{
    if (rt_capturing(s))
        return rt_set(rt_capture_host(s, fn, data));
    cudaError_t e = cudaStreamSynchronize(s); /* everything issued before has run */
    if (!e)
        fn(data);
    return e;
}

API cudaError_t cudaStreamAddCallback(cudaStream_t s, cudaStreamCallback_t cb, void *data,
                                      unsigned int flags)
{
    if (flags)
        return rt_set(cudaErrorInvalidValue);
    cudaError_t e = cudaStreamSynchronize(s);
    cb(s, e, data);
    return cudaSuccess;
}

/* Limits are recorded and reported; the emulated device enforces none of them. */
static size_t limits[16] = {[cudaLimitStackSize] = 1024, [cudaLimitPrintfFifoSize] = 1 << 20,
                            [cudaLimitMallocHeapSize] = 8 << 20};

API cudaError_t cudaDeviceSetLimit(enum cudaLimit limit, size_t value)
{
    if ((unsigned)limit >= sizeof limits / sizeof limits[0])
        return rt_set(cudaErrorUnsupportedLimit);
    limits[limit] = value;
    return cudaSuccess;
}

API cudaError_t cudaDeviceGetLimit(size_t *value, enum cudaLimit limit)
{
    if (!value || (unsigned)limit >= sizeof limits / sizeof limits[0])
        return rt_set(cudaErrorUnsupportedLimit);
    *value = limits[limit];
    return cudaSuccess;
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

API cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *n, const void *func,
                                                              int block, size_t dynamic_shared)
{
    return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(n, func, block,
                                                                  dynamic_shared, 0);
}

API cudaError_t cudaProfilerStart(void)
{
    return cudaSuccess; /* no profiler attaches to the emulated device */
}

API cudaError_t cudaProfilerStop(void)
{
    return cudaSuccess;
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
    if (least) /* streams of a context share its one handle: one priority */
        *least = 0;
    if (greatest)
        *greatest = 0;
    return cudaSuccess;
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
    (void)s;
    if (!flags)
        return rt_set(cudaErrorInvalidValue);
    *flags = cudaStreamDefault;
    return cudaSuccess;
}

API cudaError_t cudaStreamGetPriority(cudaStream_t s, int *priority)
{
    (void)s;
    if (!priority)
        return rt_set(cudaErrorInvalidValue);
    *priority = 0;
    return cudaSuccess;
}

/* Stream-ordered allocation: allocating at once is ordered before any later use; freeing
 * waits for the stream's work first. */
API cudaError_t cudaMemset2DAsync(void *p, size_t pitch, int value, size_t width,
                                  size_t height, cudaStream_t s)
{
    if (rt_capturing(s))
        return rt_set(rt_capture_memset2d(s, p, pitch, value, width, height));
    return cudaMemset2D(p, pitch, value, width, height); /* finishes on return */
}
