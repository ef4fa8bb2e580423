/* cuMemcpyBatchAsync (CUDA 12.8+): `count` copies, each of any direction (the unified address
 * space tells), issued in order in the stream.  The attributes are hints (source access
 * order, location hints) that a copy issued in stream order satisfies; they are checked as
 * CUDA checks them: attrsIdxs[0] is 0 and the indices increase below count.  CUDA 12.8's form
 * (the plain name) also says which copy failed: *failIdx, SIZE_MAX when the failure concerns
 * no single copy; CUDA 13's (_v2) does not. */
#include <stdint.h>

#include "cuda_internal.h"

static int attrs_valid(size_t count, const CUmemcpyAttributes *attrs, const size_t *idxs,
                       size_t n)
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

static CUresult batch(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                      CUmemcpyAttributes *attrs, size_t *idxs, size_t n, size_t *fail,
                      CUstream s)
{
    if (fail)
        *fail = SIZE_MAX;
    if (!count || !dsts || !srcs || !sizes || !attrs_valid(count, attrs, idxs, n))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        CUresult r = cuMemcpyAsync(dsts[i], srcs[i], sizes[i], s);
        if (r) {
            if (fail)
                *fail = i;
            return r;
        }
    }
    return CUDA_SUCCESS;
}

API CUresult cuMemcpyBatchAsync_v2(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
                                   size_t count, CUmemcpyAttributes *attrs, size_t *attrsIdxs,
                                   size_t numAttrs, CUstream s)
{
    return batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, NULL, s);
}

/* CUDA 12.8's form keeps the plain name. */
API CUresult cu_memcpy_batch_v1(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
                                size_t count, CUmemcpyAttributes *attrs, size_t *attrsIdxs,
                                size_t numAttrs, size_t *failIdx, CUstream s)
    __asm__("cuMemcpyBatchAsync");
API CUresult cu_memcpy_batch_v1(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
                                size_t count, CUmemcpyAttributes *attrs, size_t *attrsIdxs,
                                size_t numAttrs, size_t *failIdx, CUstream s)
{
    return batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, s);
}

/* The per-thread default-stream names of these entry points (cuda_internal.h). */
PTSZ(cuMemcpyBatchAsync_v2)
extern __typeof__(cu_memcpy_batch_v1) cu_memcpy_batch_v1_ptsz __asm__("cuMemcpyBatchAsync_ptsz")
    __attribute__((alias("cuMemcpyBatchAsync"), visibility("default")));
