/* Pitched (2D) memory: rows of `width` bytes `pitch` bytes apart.  A 2D copy whose rows are
 * contiguous on both sides is one copy; otherwise one copy per row (the padding between rows
 * is never touched, as in CUDA). */
#include <stdint.h>

#include "cudart_internal.h"

#define PITCH_ALIGN 256

API cudaError_t cudaMallocPitch(void **p, size_t *pitch, size_t width, size_t height)
{
    if (!pitch || !width || !height)
        return rt_set(cudaErrorInvalidValue);
    *pitch = (width + PITCH_ALIGN - 1) / PITCH_ALIGN * PITCH_ALIGN;
    return cudaMalloc(p, *pitch * height);
}

static cudaError_t copy_2d(void *dst, size_t dpitch, const void *src, size_t spitch,
                           size_t width, size_t height, enum cudaMemcpyKind kind,
                           cudaStream_t s, int async)
{
    CUcontext ctx;
    cudaError_t e = rt_ctx(&ctx);
    if (e)
        return e;
    if (width > dpitch || width > spitch)
        return rt_set(cudaErrorInvalidPitchValue);
    if (dpitch == width && spitch == width)
        return rt_set(rt_from(rt_copy(dst, src, width * height, kind, s, async)));
    for (size_t row = 0; row < height; row++) {
        CUresult r = rt_copy((uint8_t *)dst + row * dpitch, (const uint8_t *)src + row * spitch,
                             width, kind, s, async);
        if (r)
            return rt_set(rt_from(r));
    }
    return cudaSuccess;
}

API cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch,
                             size_t width, size_t height, enum cudaMemcpyKind kind)
{
    return copy_2d(dst, dpitch, src, spitch, width, height, kind, NULL, 0);
}

API cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                                  size_t width, size_t height, enum cudaMemcpyKind kind,
                                  cudaStream_t s)
{
    return copy_2d(dst, dpitch, src, spitch, width, height, kind, s, 1);
}

API cudaError_t cudaMemset2D(void *p, size_t pitch, int value, size_t width, size_t height)
{
    if (width > pitch)
        return rt_set(cudaErrorInvalidPitchValue);
    if (width == pitch)
        return cudaMemset(p, value, width * height);
    for (size_t row = 0; row < height; row++) {
        cudaError_t e = cudaMemset((uint8_t *)p + row * pitch, value, width);
        if (e)
            return e;
    }
    return cudaSuccess;
}
