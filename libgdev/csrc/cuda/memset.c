/* cuMemsetD8/16/32 and cuMemsetD2D8/16/32, plain and Async.  A fill is a copy of a
 * pattern buffer (at most MEMSET_CHUNK bytes) to each run of the destination: the whole
 * range when it is contiguous, otherwise each row of a pitched region (the padding between
 * rows is never touched, as in CUDA).  The Async forms run in their stream's order and are
 * done when they return (a pageable copy: memory.c); the plain forms are blocking. */
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

#define MEMSET_CHUNK (4u << 20)
#define PITCH_ALIGN 256

static CUresult fill_run(CUdeviceptr dst, const uint8_t *pattern, size_t chunk, size_t bytes,
                         CUstream s, int async)
{
    for (size_t off = 0; off < bytes; off += chunk) {
        size_t n = bytes - off < chunk ? bytes - off : chunk;
        CUresult r = async ? cuMemcpyHtoDAsync(dst + off, pattern, n, s)
                           : cuMemcpyHtoD(dst + off, pattern, n);
        if (r)
            return r;
    }
    return CUDA_SUCCESS;
}

/* Fill `height` rows of `width` elements of `esize` bytes, `pitch` bytes apart. */
static CUresult fill(CUdeviceptr dst, size_t pitch, uint32_t value, unsigned esize,
                     size_t width, size_t height, CUstream s, int async)
{
    CUcontext c = NULL;
    CUresult r = cu_live(&c);
    size_t row = width * esize;
    if (r)
        return r;
    if (!width || !height)
        return CUDA_SUCCESS;
    if (width > SIZE_MAX / esize || (height > 1 && pitch < row) ||
        (pitch == row && height > SIZE_MAX / row))
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuMemset: pitch %zu below the row of %zu "
                       "bytes, or too large", pitch, row);
    int flat = pitch == row || height == 1;
    size_t run = flat ? row * height : row, chunk = run < MEMSET_CHUNK ? run : MEMSET_CHUNK;
    uint8_t *pattern = malloc(chunk);
    if (!pattern)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; i < chunk; i += esize)
        memcpy(pattern + i, &value, esize);
    for (size_t y = 0, n = flat ? 1 : height; y < n && !r; y++)
        r = fill_run(dst + y * pitch, pattern, chunk, run, s, async);
    free(pattern);
    return r;
}

API CUresult cuMemsetD8(CUdeviceptr d, unsigned char v, size_t n)
{
    return fill(d, n, v, 1, n, 1, NULL, 0);
}

API CUresult cuMemsetD16(CUdeviceptr d, unsigned short v, size_t n)
{
    return fill(d, 2 * n, v, 2, n, 1, NULL, 0);
}

API CUresult cuMemsetD32(CUdeviceptr d, unsigned int v, size_t n)
{
    return fill(d, 4 * n, v, 4, n, 1, NULL, 0);
}

API CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s)
{
    return fill(d, n, v, 1, n, 1, s, 1);
}

API CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream s)
{
    return fill(d, 2 * n, v, 2, n, 1, s, 1);
}

API CUresult cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, CUstream s)
{
    return fill(d, 4 * n, v, 4, n, 1, s, 1);
}

API CUresult cuMemsetD2D8(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h)
{
    return fill(d, pitch, v, 1, w, h, NULL, 0);
}

API CUresult cuMemsetD2D16(CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h)
{
    return fill(d, pitch, v, 2, w, h, NULL, 0);
}

API CUresult cuMemsetD2D32(CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t h)
{
    return fill(d, pitch, v, 4, w, h, NULL, 0);
}

API CUresult cuMemsetD2D8Async(CUdeviceptr d, size_t pitch, unsigned char v, size_t w,
                               size_t h, CUstream s)
{
    return fill(d, pitch, v, 1, w, h, s, 1);
}

API CUresult cuMemsetD2D16Async(CUdeviceptr d, size_t pitch, unsigned short v, size_t w,
                                size_t h, CUstream s)
{
    return fill(d, pitch, v, 2, w, h, s, 1);
}

API CUresult cuMemsetD2D32Async(CUdeviceptr d, size_t pitch, unsigned int v, size_t w,
                                size_t h, CUstream s)
{
    return fill(d, pitch, v, 4, w, h, s, 1);
}

/* Rows of `width` bytes, `*pitch` bytes apart: the pitch is the row rounded up to
 * PITCH_ALIGN (a multiple of CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT), so each row
 * starts aligned for any element size and can back a pitch-2D texture. */
API CUresult cuMemAllocPitch(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                             unsigned int elementSize)
{
    const size_t align = PITCH_ALIGN;
    CUcontext c = NULL;
    CUresult r = cu_live(&c);
    if (r)
        return r;
    if (!dptr || !pitch || !width || !height ||
        (elementSize != 4 && elementSize != 8 && elementSize != 16))
        return CUDA_ERROR_INVALID_VALUE;
    size_t p = (width + align - 1) / align * align;
    if (p < width || height > SIZE_MAX / p)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuMemAllocPitch: %zu x %zu is too large",
                       width, height);
    if ((r = cuMemAlloc(dptr, p * height)))
        return r;
    *pitch = p;
    return CUDA_SUCCESS;
}

/* The per-thread default-stream names of these entry points (cuda_internal.h). */
PTDS(cuMemsetD8) PTDS(cuMemsetD16) PTDS(cuMemsetD32) PTDS(cuMemsetD2D8) PTDS(cuMemsetD2D16)
PTDS(cuMemsetD2D32) PTSZ(cuMemsetD8Async) PTSZ(cuMemsetD16Async) PTSZ(cuMemsetD32Async)
PTSZ(cuMemsetD2D8Async) PTSZ(cuMemsetD2D16Async) PTSZ(cuMemsetD2D32Async)
