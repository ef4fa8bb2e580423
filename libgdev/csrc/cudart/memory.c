/* Memory, copies (to and from symbols too), memset, streams and events: each a thin call of
 * the driver API in the current device's primary context. */
#include <stdint.h>
#include <string.h>

#include "cudart_internal.h"


API cudaError_t cudaMalloc(void **p, size_t size)
{
    CUdeviceptr d = 0;
    IN_CTX();
    if (!p)
        return rt_set(cudaErrorInvalidValue);
    CUresult r = cuMemAlloc(&d, size);
    *p = (void *)(uintptr_t)d;
    CALL(r);
}

API cudaError_t cudaFree(void *p)
{
    IN_CTX();
    if (rt_gmem_owned(p)) /* back to its graph (graph_mem.c) */
        return cudaSuccess;
    CALL(cuMemFree((CUdeviceptr)(uintptr_t)p));
}

/* Managed memory: host and device share the pages (libcuda's cuMemAllocManaged). */
API cudaError_t cudaMallocManaged(void **p, size_t size, unsigned int flags)
{
    CUdeviceptr d = 0;
    IN_CTX();
    if (!p)
        return rt_set(cudaErrorInvalidValue);
    CUresult r = cuMemAllocManaged(&d, size, flags);
    *p = (void *)(uintptr_t)d;
    CALL(r);
}

API cudaError_t cudaStreamAttachMemAsync(cudaStream_t s, void *p, size_t length,
                                         unsigned int flags)
{
    IN_CTX();
    CALL(cuStreamAttachMemAsync(s, (CUdeviceptr)(uintptr_t)p, length, flags));
}

static CUmemLocation location(struct cudaMemLocation loc)
{
    return (CUmemLocation){.type = (CUmemLocationType)loc.type, .id = loc.id};
}

API cudaError_t cudaMemPrefetchAsync(const void *p, size_t n, struct cudaMemLocation loc,
                                     unsigned int flags, cudaStream_t s)
{
    IN_CTX();
    CALL(cuMemPrefetchAsync_v2((CUdeviceptr)(uintptr_t)p, n, location(loc), flags, s));
}

API cudaError_t cudaMemAdvise(const void *p, size_t n, enum cudaMemoryAdvise advice,
                              struct cudaMemLocation loc)
{
    IN_CTX();
    CALL(cuMemAdvise_v2((CUdeviceptr)(uintptr_t)p, n, (CUmem_advise)advice, location(loc)));
}

API cudaError_t cudaHostAlloc(void **p, size_t size, unsigned int flags)
{
    IN_CTX();
    CALL(cuMemHostAlloc(p, size, flags & ~(unsigned)cudaHostAllocMapped));
}

API cudaError_t cudaMallocHost(void **p, size_t size)
{
    return cudaHostAlloc(p, size, 0);
}

API cudaError_t cudaFreeHost(void *p)
{
    IN_CTX();
    CALL(cuMemFreeHost(p));
}

API cudaError_t cudaHostGetDevicePointer(void **pd, void *ph, unsigned int flags)
{
    CUdeviceptr d = 0;
    IN_CTX();
    CUresult r = cuMemHostGetDevicePointer(&d, ph, flags);
    if (pd)
        *pd = (void *)(uintptr_t)d;
    CALL(r);
}

/* Every pinned buffer is mapped (it has a device address); none is portable (one handle). */
API cudaError_t cudaHostGetFlags(unsigned int *flags, void *ph)
{
    CUdeviceptr d = 0;
    IN_CTX();
    if (!flags || !ph || cuMemHostGetDevicePointer(&d, ph, 0))
        return rt_set(cudaErrorInvalidValue);
    *flags = cudaHostAllocMapped;
    return cudaSuccess;
}

API cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total)
{
    IN_CTX();
    CALL(cuMemGetInfo(free_bytes, total));
}

CUresult rt_copy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                 cudaStream_t s, int async)
{
    CUdeviceptr d = (CUdeviceptr)(uintptr_t)dst, h = (CUdeviceptr)(uintptr_t)src;
    switch (kind) {
    case cudaMemcpyHostToDevice:
        return async ? cuMemcpyHtoDAsync(d, src, n, s) : cuMemcpyHtoD(d, src, n);
    case cudaMemcpyDeviceToHost:
        return async ? cuMemcpyDtoHAsync(dst, h, n, s) : cuMemcpyDtoH(dst, h, n);
    case cudaMemcpyDeviceToDevice:
        return async ? cuMemcpyDtoDAsync(d, h, n, s) : cuMemcpyDtoD(d, h, n);
    case cudaMemcpyHostToHost:
        memmove(dst, src, n);
        return CUDA_SUCCESS;
    case cudaMemcpyDefault:
        return async ? cuMemcpyAsync(d, h, n, s) : cuMemcpy(d, h, n);
    }
    return CUDA_ERROR_INVALID_VALUE;
}

API cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind)
{
    IN_CTX();
    if ((unsigned)kind > cudaMemcpyDefault)
        return rt_set(cudaErrorInvalidMemcpyDirection);
    CUresult r = rt_copy(dst, src, n, kind, NULL, 0);
    rt_managed_pull(); /* a blocking copy waits for the kernels before it */
    CALL(r);
}

API cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                                cudaStream_t s)
{
    IN_CTX();
    if ((unsigned)kind > cudaMemcpyDefault)
        return rt_set(cudaErrorInvalidMemcpyDirection);
    if (rt_capturing(s))
        return rt_set(rt_capture_copy(s, dst, src, n, kind));
    CALL(rt_copy(dst, src, n, kind, s, 1));
}

API cudaError_t cudaMemset(void *p, int value, size_t n)
{
    IN_CTX();
    CALL(cuMemsetD8((CUdeviceptr)(uintptr_t)p, (unsigned char)value, n));
}

API cudaError_t cudaMemsetAsync(void *p, int value, size_t n, cudaStream_t s)
{
    IN_CTX();
    if (rt_capturing(s))
        return rt_set(rt_capture_memset(s, p, value, n));
    CALL(cuMemsetD8Async((CUdeviceptr)(uintptr_t)p, (unsigned char)value, n, s));
}

/* A symbol's device address, checked against [offset, offset + n). */
static cudaError_t symbol_range(const void *symbol, size_t n, size_t offset, CUdeviceptr *addr)
{
    size_t size;
    cudaError_t e = rt_symbol(symbol, addr, &size);
    if (e)
        return rt_set(e);
    if (offset > size || n > size - offset)
        return rt_set(cudaErrorInvalidValue);
    *addr += offset;
    return cudaSuccess;
}

API cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t n, size_t offset,
                                   enum cudaMemcpyKind kind)
{
    CUdeviceptr d;
    IN_CTX();
    cudaError_t e = symbol_range(symbol, n, offset, &d);
    if (e)
        return e;
    CALL(rt_copy((void *)(uintptr_t)d, src,  n,
              kind == cudaMemcpyDeviceToDevice ? kind : cudaMemcpyHostToDevice, NULL, 0));
}

API cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t n, size_t offset,
                                     enum cudaMemcpyKind kind)
{
    CUdeviceptr d;
    IN_CTX();
    cudaError_t e = symbol_range(symbol, n, offset, &d);
    if (e)
        return e;
    CALL(rt_copy(dst, (void *)(uintptr_t)d, n,
              kind == cudaMemcpyDeviceToDevice ? kind : cudaMemcpyDeviceToHost, NULL, 0));
}

API cudaError_t cudaMemcpyToSymbolAsync(const void *symbol, const void *src, size_t n,
                                        size_t offset, enum cudaMemcpyKind kind, cudaStream_t s)
{
    CUdeviceptr d;
    if (rt_capturing(s)) { /* a copy node into the variable */
        cudaError_t e = symbol_range(symbol, n, offset, &d);
        return e ? e : rt_set(rt_capture_copy(s, (void *)(uintptr_t)d, src, n,
                                              kind == cudaMemcpyDeviceToDevice
                                                  ? kind : cudaMemcpyHostToDevice));
    }
    return cudaMemcpyToSymbol(symbol, src, n, offset, kind); /* pageable: done on return */
}

API cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const void *symbol, size_t n,
                                          size_t offset, enum cudaMemcpyKind kind,
                                          cudaStream_t s)
{
    CUdeviceptr d;
    if (rt_capturing(s)) { /* a copy node out of the variable */
        cudaError_t e = symbol_range(symbol, n, offset, &d);
        return e ? e : rt_set(rt_capture_copy(s, dst, (void *)(uintptr_t)d, n,
                                              kind == cudaMemcpyDeviceToDevice
                                                  ? kind : cudaMemcpyDeviceToHost));
    }
    return cudaMemcpyFromSymbol(dst, symbol, n, offset, kind);
}

API cudaError_t cudaGetSymbolAddress(void **p, const void *symbol)
{
    CUdeviceptr d;
    IN_CTX();
    cudaError_t e = symbol_range(symbol, 0, 0, &d);
    if (!e)
        *p = (void *)(uintptr_t)d;
    return e;
}

API cudaError_t cudaGetSymbolSize(size_t *size, const void *symbol)
{
    CUdeviceptr d;
    IN_CTX();
    return rt_set(rt_symbol(symbol, &d, size));
}

/* ---- streams and events --------------------------------------------------------------- */

API cudaError_t cudaStreamCreate(cudaStream_t *s)
{
    IN_CTX();
    CALL(cuStreamCreate(s, 0));
}

API cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags)
{
    IN_CTX();
    CALL(cuStreamCreate(s, flags));
}

API cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned int flags, int prio)
{
    IN_CTX();
    CALL(cuStreamCreateWithPriority(s, flags, prio));
}

API cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    CALL(cuStreamDestroy(s));
}

API cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    IN_CTX();
    if (rt_capturing(s))
        return rt_set(rt_capture_sync(s));
    CUresult r = cuStreamSynchronize(s);
    rt_managed_pull();
    CALL(r);
}

API cudaError_t cudaStreamQuery(cudaStream_t s)
{
    IN_CTX();
    CUresult r = cuStreamQuery(s);
    return r == CUDA_ERROR_NOT_READY ? cudaErrorNotReady : rt_set(rt_from(r));
}

API cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags)
{
    IN_CTX();
    int captured;
    cudaError_t err = rt_capture_wait(s, e, &captured);
    if (captured)
        return rt_set(err);
    CALL(cuStreamWaitEvent(s, e, flags));
}

API cudaError_t cudaEventCreate(cudaEvent_t *e)
{
    IN_CTX();
    CALL(cuEventCreate(e, 0));
}

API cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags)
{
    IN_CTX();
    CALL(cuEventCreate(e, flags));
}

API cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    rt_capture_forget_event(e);
    CALL(cuEventDestroy(e));
}

API cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    IN_CTX();
    if (rt_capturing(s))
        return rt_set(rt_capture_event(s, e, 0));
    rt_capture_forget_event(e);
    CALL(cuEventRecord(e, s));
}

API cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    CUresult r = cuEventSynchronize(e);
    rt_managed_pull();
    CALL(r);
}

API cudaError_t cudaEventQuery(cudaEvent_t e)
{
    CUresult r = cuEventQuery(e);
    return r == CUDA_ERROR_NOT_READY ? cudaErrorNotReady : rt_set(rt_from(r));
}

API cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
    CALL(cuEventElapsedTime(ms, a, b));
}

API cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func)
{
    CUfunction fn;
    cudaError_t e = rt_function(func, &fn);
    if (e)
        return rt_set(e);
    int shared = 0, constant = 0, local = 0;
    memset(attr, 0, sizeof *attr);
    cuFuncGetAttribute(&shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn);
    cuFuncGetAttribute(&constant, CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, fn);
    cuFuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fn);
    attr->sharedSizeBytes = (size_t)shared;
    attr->constSizeBytes = (size_t)constant;
    attr->localSizeBytes = (size_t)local;
    cuFuncGetAttribute(&attr->maxThreadsPerBlock, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn);
    cuFuncGetAttribute(&attr->numRegs, CU_FUNC_ATTRIBUTE_NUM_REGS, fn);
    cuFuncGetAttribute(&attr->ptxVersion, CU_FUNC_ATTRIBUTE_PTX_VERSION, fn);
    cuFuncGetAttribute(&attr->binaryVersion, CU_FUNC_ATTRIBUTE_BINARY_VERSION, fn);
    cuFuncGetAttribute(&attr->maxDynamicSharedSizeBytes,
                       CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, fn);
    cuFuncGetAttribute(&attr->preferredShmemCarveout,
                       CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, fn);
    return cudaSuccess;
}

/* The names nvcc --default-stream per-thread binds these by (cudart_internal.h). */
RT_PTSZ(cudaEventRecord) RT_PTSZ(cudaMemPrefetchAsync) RT_PTSZ(cudaMemcpyAsync)
RT_PTSZ(cudaMemcpyFromSymbolAsync) RT_PTDS(cudaMemcpyFromSymbol)
RT_PTSZ(cudaMemcpyToSymbolAsync) RT_PTDS(cudaMemcpyToSymbol) RT_PTDS(cudaMemcpy)
RT_PTSZ(cudaMemsetAsync) RT_PTDS(cudaMemset) RT_PTSZ(cudaStreamAttachMemAsync)
RT_PTSZ(cudaStreamQuery) RT_PTSZ(cudaStreamSynchronize) RT_PTSZ(cudaStreamWaitEvent)
