/* cudaMemcpyBatchAsync (CUDA 12.8+): `count` copies in one call, each of any direction (the
 * unified address space tells), issued in order in the stream.  The attributes are hints
 * (source access order, location hints) that a copy issued in stream order satisfies; they are
 * checked as CUDA checks them: attrsIdxs[0] is 0 and the indices increase below count. */
#include "cudart_internal.h"

#ifndef RT_CUDA12_ABI /* CUDA 12.8 had another signature (a failIdx); not exported there */

static int attrs_valid(size_t count, const struct cudaMemcpyAttributes *attrs,
                       const size_t *idxs, size_t n)
{
    if (!n)
        return 1;
    if (!attrs || !idxs || n > count || idxs[0])
        return 0;
    for (size_t i = 1; i < n; i++)
        if (idxs[i] <= idxs[i - 1] || idxs[i] >= count)
            return 0;
    return 1;
}

API cudaError_t cudaMemcpyBatchAsync(void *const *dsts, const void *const *srcs,
                                     const size_t *sizes, size_t count,
                                     struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs,
                                     size_t numAttrs, cudaStream_t stream)
{
    if (!count || !dsts || !srcs || !sizes || !attrs_valid(count, attrs, attrsIdxs, numAttrs))
        return rt_set(cudaErrorInvalidValue);
    for (size_t i = 0; i < count; i++) {
        cudaError_t e = cudaMemcpyAsync(dsts[i], srcs[i], sizes[i], cudaMemcpyDefault, stream);
        if (e)
            return e;
    }
    return cudaSuccess;
}

/* The name nvcc --default-stream per-thread binds it by (cudart_internal.h). */
RT_PTSZ(cudaMemcpyBatchAsync)
#endif
