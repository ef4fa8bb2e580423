/* Pitched (2D) memory: rows of `width` bytes `pitch` bytes apart, allocated, copied and set
 * by libcuda (cuMemAllocPitch, cuMemcpy2D/3D, cuMemsetD2D8: one copy when the rows are
 * contiguous, otherwise one per row, the padding between rows never touched, as in CUDA). */
#include <stdint.h>

#include "cudart_internal.h"

/* libcuda's cuMemAllocPitch chooses the pitch (rows aligned to 256 bytes). */
API cudaError_t cudaMallocPitch(void **p, size_t *pitch, size_t width, size_t height)
{
    CUcontext ctx;
    CUdeviceptr d = 0;
    cudaError_t e = rt_ctx(&ctx);
    if (e)
        return e;
    if (!p)
        return rt_set(cudaErrorInvalidValue);
    e = rt_from(cuMemAllocPitch(&d, pitch, width, height, 4));
    *p = (void *)(uintptr_t)d;
    return rt_set(e);
}

static cudaError_t copy_2d(void *dst, size_t dpitch, const void *src, size_t spitch,
                           size_t width, size_t height, enum cudaMemcpyKind kind,
                           cudaStream_t s, int async)
{
    struct cudaMemcpy3DParms p = {
        .srcPtr = {.ptr = (void *)src, .pitch = spitch, .xsize = width, .ysize = height},
        .dstPtr = {.ptr = dst, .pitch = dpitch, .xsize = width, .ysize = height},
        .extent = {.width = width, .height = height, .depth = 1}, .kind = kind};
    CUcontext ctx;
    cudaError_t e = rt_ctx(&ctx);
    if (e)
        return e;
    if (width > dpitch || width > spitch)
        return rt_set(cudaErrorInvalidPitchValue);
    return rt_copy_3d(&p, s, async);
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
    struct cudaMemcpy3DParms p = {
        .srcPtr = {.ptr = (void *)src, .pitch = spitch, .xsize = width, .ysize = height},
        .dstPtr = {.ptr = dst, .pitch = dpitch, .xsize = width, .ysize = height},
        .extent = {.width = width, .height = height, .depth = 1}, .kind = kind};
    if (rt_capturing(s)) /* a 3D copy node of one slice */
        return rt_set(width > dpitch || width > spitch ? cudaErrorInvalidPitchValue
                                                       : rt_capture_copy3d(s, &p));
    return copy_2d(dst, dpitch, src, spitch, width, height, kind, s, 1);
}

API cudaError_t cudaMemset2D(void *p, size_t pitch, int value, size_t width, size_t height)
{
    CUcontext ctx;
    cudaError_t e = rt_ctx(&ctx);
    if (e)
        return e;
    if (width > pitch)
        return rt_set(cudaErrorInvalidPitchValue);
    return rt_set(rt_from(cuMemsetD2D8((CUdeviceptr)(uintptr_t)p, pitch, (unsigned char)value,
                                       width, height)));
}

/* 3D: slices of `ysize` rows, `pitch * ysize` bytes apart (cudaPitchedPtr); a 3D copy or memset
 * is one 2D one per slice; a copy with a CUDA array is array3d.c's. */
API cudaError_t cudaMalloc3D(struct cudaPitchedPtr *pp, struct cudaExtent e)
{
    size_t pitch = 0;
    void *p = NULL;
    if (!pp || !e.width || !e.height || !e.depth || e.height > SIZE_MAX / e.depth)
        return rt_set(cudaErrorInvalidValue);
    cudaError_t err = cudaMallocPitch(&p, &pitch, e.width, e.height * e.depth);
    if (err)
        return err;
    *pp = (struct cudaPitchedPtr){.ptr = p, .pitch = pitch, .xsize = e.width, .ysize = e.height};
    return cudaSuccess;
}

static cudaError_t copy_3d(const struct cudaMemcpy3DParms *p, cudaStream_t s, int async)
{
    CUcontext ctx;
    cudaError_t e = rt_ctx(&ctx);
    if (e)
        return e;
    if (!p)
        return rt_set(cudaErrorInvalidValue);
    const struct cudaPitchedPtr *a = &p->srcPtr, *b = &p->dstPtr;
    if (!p->srcArray && !p->dstArray &&
        (!a->ptr || !b->ptr || !a->pitch || !b->pitch ||
         (p->extent.depth > 1 && (!a->ysize || !b->ysize))))
        return rt_set(cudaErrorInvalidValue);
    return rt_copy_3d(p, s, async);
}

API cudaError_t cudaMemcpy3D(const struct cudaMemcpy3DParms *p)
{
    return copy_3d(p, NULL, 0);
}

API cudaError_t cudaMemcpy3DAsync(const struct cudaMemcpy3DParms *p, cudaStream_t s)
{
    if (rt_capturing(s))
        return rt_set(rt_capture_copy3d(s, p));
    return copy_3d(p, s, 1);
}

/* A 3D memset: one 2D memset per slice, in stream s when async. */
static cudaError_t memset_3d(struct cudaPitchedPtr p, int value, struct cudaExtent e,
                             cudaStream_t s, int async)
{
    if (!p.ptr || (e.depth > 1 && !p.ysize))
        return rt_set(cudaErrorInvalidValue);
    for (size_t z = 0; z < e.depth; z++) {
        void *slice = (uint8_t *)p.ptr + z * p.pitch * p.ysize;
        cudaError_t err = async ? cudaMemset2DAsync(slice, p.pitch, value, e.width, e.height, s)
                                : cudaMemset2D(slice, p.pitch, value, e.width, e.height);
        if (err)
            return err;
    }
    return cudaSuccess;
}

API cudaError_t cudaMemset3D(struct cudaPitchedPtr p, int value, struct cudaExtent e)
{
    return memset_3d(p, value, e, NULL, 0);
}

API cudaError_t cudaMemset3DAsync(struct cudaPitchedPtr p, int value, struct cudaExtent e,
                                  cudaStream_t s)
{
    return memset_3d(p, value, e, s, 1);
}

/* The names nvcc --default-stream per-thread binds these by (cudart_internal.h). */
RT_PTSZ(cudaMemcpy2DAsync) RT_PTDS(cudaMemcpy2D) RT_PTSZ(cudaMemcpy3DAsync)
RT_PTDS(cudaMemcpy3D) RT_PTDS(cudaMemset2D) RT_PTSZ(cudaMemset3DAsync) RT_PTDS(cudaMemset3D)
