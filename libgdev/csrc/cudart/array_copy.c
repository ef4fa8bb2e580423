/* The deprecated linear array copies of the runtime (cudaMemcpyArrayToArray and the
 * asynchronous cudaMemcpyToArrayAsync/FromArrayAsync), over the 2D array copies of array.c.
 * `count` bytes run row after row from (wOffset, hOffset), as CUDA defines them. */
#include <stdint.h>

#include "cudart_internal.h"

/* Through a device buffer of `count` bytes: the two arrays' rows need not line up. */
API cudaError_t cudaMemcpyArrayToArray(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst,
                                       cudaArray_const_t src, size_t wOffsetSrc,
                                       size_t hOffsetSrc, size_t count,
                                       enum cudaMemcpyKind kind)
{
    void *tmp = NULL;
    if (kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
        return rt_set(cudaErrorInvalidMemcpyDirection);
    if (!count)
        return cudaSuccess;
    cudaError_t e = cudaMalloc(&tmp, count);
    if (!e)
        e = cudaMemcpyFromArray(tmp, src, wOffsetSrc, hOffsetSrc, count,
                                cudaMemcpyDeviceToDevice);
    if (!e)
        e = cudaMemcpyToArray(dst, wOffsetDst, hOffsetDst, tmp, count,
                              cudaMemcpyDeviceToDevice);
    if (tmp)
        cudaFree(tmp);
    return rt_set(e);
}

/* The asynchronous forms wait for the stream's earlier work, then copy, as the 2D array
 * copies' asynchronous forms do (array.c). */
API cudaError_t cudaMemcpyToArrayAsync(cudaArray_t dst, size_t wOffset, size_t hOffset,
                                       const void *src, size_t count, enum cudaMemcpyKind kind,
                                       cudaStream_t stream)
{
    cudaError_t e = cudaStreamSynchronize(stream);
    return e ? e : cudaMemcpyToArray(dst, wOffset, hOffset, src, count, kind);
}

API cudaError_t cudaMemcpyFromArrayAsync(void *dst, cudaArray_const_t src, size_t wOffset,
                                         size_t hOffset, size_t count,
                                         enum cudaMemcpyKind kind, cudaStream_t stream)
{
    cudaError_t e = cudaStreamSynchronize(stream);
    return e ? e : cudaMemcpyFromArray(dst, src, wOffset, hOffset, count, kind);
}

/* The names nvcc --default-stream per-thread binds these by (cudart_internal.h). */
RT_PTDS(cudaMemcpyArrayToArray) RT_PTSZ(cudaMemcpyFromArrayAsync)
RT_PTSZ(cudaMemcpyToArrayAsync)
