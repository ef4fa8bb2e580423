/* CUDA arrays in the runtime API, over the driver's: cudaMallocArray/cudaFreeArray/
 * cudaArrayGetInfo, and copies to and from arrays as cuMemcpy2D (cudaArray_t is the driver's
 * CUarray).  Channel descriptors convert as for texture objects (texture.c). */
#include <stdint.h>
#include <string.h>

#include "cudart_internal.h"

API cudaError_t cudaMallocArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc,
                                size_t width, size_t height, unsigned int flags)
{
    CUDA_ARRAY_DESCRIPTOR d;
    CUcontext ctx;
    cudaError_t e = rt_ctx(&ctx);
    if (e)
        return e;
    if (!array || !desc || flags & ~(unsigned)(cudaArraySurfaceLoadStore |
                                               cudaArrayTextureGather))
        return rt_set(cudaErrorInvalidValue); /* surfaces, gathers need no flag: accepted */
    if (!rt_channel_format(desc, &d.Format, &d.NumChannels))
        return rt_set(cudaErrorInvalidChannelDescriptor);
    d.Width = width;
    d.Height = height;
    return rt_set(rt_from(cuArrayCreate((CUarray *)array, &d)));
}

API cudaError_t cudaFreeArray(cudaArray_t array)
{
    if (!array)
        return cudaSuccess;
    return rt_set(rt_from(cuArrayDestroy((CUarray)array)));
}

API cudaError_t cudaGetChannelDesc(struct cudaChannelFormatDesc *desc, cudaArray_const_t array)
{
    CUDA_ARRAY_DESCRIPTOR d;
    if (!desc)
        return rt_set(cudaErrorInvalidValue);
    CUresult r = cuArrayGetDescriptor(&d, (CUarray)array);
    if (r)
        return rt_set(rt_from(r));
    *desc = rt_channel_desc(d.Format, d.NumChannels);
    return cudaSuccess;
}

API cudaError_t cudaArrayGetInfo(struct cudaChannelFormatDesc *desc, struct cudaExtent *extent,
                                 unsigned int *flags, cudaArray_t array)
{
    CUDA_ARRAY3D_DESCRIPTOR d;
    CUresult r = cuArray3DGetDescriptor(&d, (CUarray)array);
    if (r)
        return rt_set(rt_from(r));
    if (desc)
        *desc = rt_channel_desc(d.Format, d.NumChannels);
    if (extent) {
        extent->width = d.Width;
        extent->height = d.Height;
        extent->depth = d.Depth;
    }
    if (flags)
        *flags = d.Flags; /* cudaArray* flags are the driver's CUDA_ARRAY3D_* values */
    return cudaSuccess;
}

/* Whether the memory at p is device memory for a copy of `kind` (cudaMemcpyDefault: the
 * driver knows the pointer). */
static int on_device(const void *p, enum cudaMemcpyKind kind, int src)
{
    CUdeviceptr base;
    size_t size;
    if (kind == cudaMemcpyDefault)
        return cuMemGetAddressRange(&base, &size, (CUdeviceptr)p) == CUDA_SUCCESS;
    if (src)
        return kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    return kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
}

/* One side of a copy that is a plain pointer with a pitch. */
static void linear_side(CUDA_MEMCPY2D *c, int src, const void *p, size_t pitch, int device)
{
    if (src) {
        c->srcMemoryType = device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
        c->srcHost = p;
        c->srcDevice = (CUdeviceptr)p;
        c->srcPitch = pitch;
    } else {
        c->dstMemoryType = device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
        c->dstHost = (void *)p;
        c->dstDevice = (CUdeviceptr)p;
        c->dstPitch = pitch;
    }
}

API cudaError_t cudaMemcpy2DToArray(cudaArray_t dst, size_t wOffset, size_t hOffset,
                                    const void *src, size_t spitch, size_t width,
                                    size_t height, enum cudaMemcpyKind kind)
{
    CUDA_MEMCPY2D c;
    memset(&c, 0, sizeof c);
    linear_side(&c, 1, src, spitch, on_device(src, kind, 1));
    c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    c.dstArray = (CUarray)dst;
    c.dstXInBytes = wOffset;
    c.dstY = hOffset;
    c.WidthInBytes = width;
    c.Height = height;
    return rt_set(rt_from(cuMemcpy2D(&c)));
}

API cudaError_t cudaMemcpy2DFromArray(void *dst, size_t dpitch, cudaArray_const_t src,
                                      size_t wOffset, size_t hOffset, size_t width,
                                      size_t height, enum cudaMemcpyKind kind)
{
    CUDA_MEMCPY2D c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    c.srcArray = (CUarray)src;
    c.srcXInBytes = wOffset;
    c.srcY = hOffset;
    linear_side(&c, 0, dst, dpitch, on_device(dst, kind, 0));
    c.WidthInBytes = width;
    c.Height = height;
    return rt_set(rt_from(cuMemcpy2D(&c)));
}

/* The deprecated linear forms: `count` bytes from (wOffset, hOffset), row after row. */
static cudaError_t array_row_bytes(cudaArray_const_t a, size_t *row)
{
    CUDA_ARRAY_DESCRIPTOR d;
    CUresult r = cuArrayGetDescriptor(&d, (CUarray)a);
    if (r)
        return rt_set(rt_from(r));
    struct cudaChannelFormatDesc cd = rt_channel_desc(d.Format, d.NumChannels);
    *row = d.Width * (size_t)(cd.x / 8) * d.NumChannels;
    return cudaSuccess;
}

/* One piece of a linear array copy: `width` bytes of `rows` rows from (x, y), host or device
 * memory at `mem` with rows `row` bytes apart. */
static cudaError_t piece(cudaArray_t a, size_t x, size_t y, void *mem, size_t row, size_t width,
                         size_t rows, enum cudaMemcpyKind kind, int to_array)
{
    if (to_array)
        return cudaMemcpy2DToArray(a, x, y, mem, row, width, rows, kind);
    return cudaMemcpy2DFromArray(mem, row, a, x, y, width, rows, kind);
}

/* `count` bytes from (wOffset, hOffset) of array `a`, row after row as CUDA defines it: the
 * rest of the first row, whole rows, then the head of the last. */
static cudaError_t linear(cudaArray_t a, size_t wOffset, size_t hOffset, void *mem, size_t count,
                          enum cudaMemcpyKind kind, int to_array)
{
    size_t row = 0, done = 0, x = wOffset, y = hOffset;
    cudaError_t e = array_row_bytes(a, &row);
    if (!e && x >= row && count)
        e = rt_set(cudaErrorInvalidValue);
    while (!e && done < count) {
        size_t left = count - done, n = left < row - x ? left : row - x, rows = 1;
        if (!x && left >= row) {
            n = row;
            rows = left / row;
        }
        e = piece(a, x, y, (uint8_t *)mem + done, row, n, rows, kind, to_array);
        done += n * rows;
        y += rows;
        x = 0;
    }
    return e;
}

API cudaError_t cudaMemcpyToArray(cudaArray_t dst, size_t wOffset, size_t hOffset,
                                  const void *src, size_t count, enum cudaMemcpyKind kind)
{
    return linear(dst, wOffset, hOffset, (void *)src, count, kind, 1);
}

API cudaError_t cudaMemcpyFromArray(void *dst, cudaArray_const_t src, size_t wOffset,
                                    size_t hOffset, size_t count, enum cudaMemcpyKind kind)
{
    return linear((cudaArray_t)src, wOffset, hOffset, dst, count, kind, 0);
}

API cudaError_t cudaMemcpy2DArrayToArray(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst,
                                         cudaArray_const_t src, size_t wOffsetSrc,
                                         size_t hOffsetSrc, size_t width, size_t height,
                                         enum cudaMemcpyKind kind)
{
    CUDA_MEMCPY2D c;
    if (kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
        return rt_set(cudaErrorInvalidMemcpyDirection);
    memset(&c, 0, sizeof c);
    c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    c.srcArray = (CUarray)src;
    c.srcXInBytes = wOffsetSrc;
    c.srcY = hOffsetSrc;
    c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    c.dstArray = (CUarray)dst;
    c.dstXInBytes = wOffsetDst;
    c.dstY = hOffsetDst;
    c.WidthInBytes = width;
    c.Height = height;
    return rt_set(rt_from(cuMemcpy2D(&c)));
}

/* The asynchronous forms wait for the stream's earlier work, then copy: ordered in the
 * stream as CUDA orders them, and done on return (an array copy is row by row anyway). */
API cudaError_t cudaMemcpy2DToArrayAsync(cudaArray_t dst, size_t wOffset, size_t hOffset,
                                         const void *src, size_t spitch, size_t width,
                                         size_t height, enum cudaMemcpyKind kind,
                                         cudaStream_t stream)
{
    cudaError_t e = cudaStreamSynchronize(stream);
    return e ? e : cudaMemcpy2DToArray(dst, wOffset, hOffset, src, spitch, width, height, kind);
}

API cudaError_t cudaMemcpy2DFromArrayAsync(void *dst, size_t dpitch, cudaArray_const_t src,
                                           size_t wOffset, size_t hOffset, size_t width,
                                           size_t height, enum cudaMemcpyKind kind,
                                           cudaStream_t stream)
{
    cudaError_t e = cudaStreamSynchronize(stream);
    return e ? e : cudaMemcpy2DFromArray(dst, dpitch, src, wOffset, hOffset, width, height,
                                         kind);
}

/* The names nvcc --default-stream per-thread binds these by (cudart_internal.h). */
RT_PTDS(cudaMemcpy2DArrayToArray) RT_PTSZ(cudaMemcpy2DFromArrayAsync)
RT_PTDS(cudaMemcpy2DFromArray) RT_PTSZ(cudaMemcpy2DToArrayAsync) RT_PTDS(cudaMemcpy2DToArray)
RT_PTDS(cudaMemcpyFromArray) RT_PTDS(cudaMemcpyToArray)
