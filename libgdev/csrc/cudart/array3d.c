/* cudaMalloc3DArray as libcuda's cuArray3DCreate: 1D and 2D arrays (depth 0), 3D arrays,
 * layered (cudaArrayLayered: depth layers, height 0 for 1D layers), cubemap
 * (cudaArrayCubemap: depth 6) and layered cubemap arrays, any of them for gathers
 * (cudaArrayTextureGather; a color-attachment, sparse or deferred-mapping array is
 * cudaErrorNotSupported), and every cudaMemcpy3DParms copy as
 * libcuda's cuMemcpy3D (copy2d.c: any box of an array's slices).  An array side of a copy
 * counts in elements (position and width), a linear side in bytes, as CUDA defines
 * cudaMemcpy3DParms; cudaArray* flags have the driver's CUDA_ARRAY3D_* values. */
#include <stdint.h>

#include "cudart_internal.h"

cudaError_t rt_array3d_desc(const struct cudaChannelFormatDesc *desc, struct cudaExtent extent,
                            unsigned int flags, CUDA_ARRAY3D_DESCRIPTOR *d)
{
    const unsigned ours = cudaArrayLayered | cudaArraySurfaceLoadStore | cudaArrayCubemap |
                          cudaArrayTextureGather;
    const unsigned known = ours | cudaArrayColorAttachment
                           | cudaArraySparse | cudaArrayDeferredMapping;
    *d = (CUDA_ARRAY3D_DESCRIPTOR){.Width = extent.width, .Height = extent.height,
                                   .Depth = extent.depth, .Flags = flags};
    if (!desc || !extent.width || (flags & ~known))
        return cudaErrorInvalidValue;
    if (flags & ~ours)
        return cudaErrorNotSupported;
    if (!rt_channel_format(desc, &d->Format, &d->NumChannels))
        return cudaErrorInvalidChannelDescriptor;
    return cudaSuccess;
}

API cudaError_t cudaMalloc3DArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc,
                                  struct cudaExtent extent, unsigned int flags)
{
    CUDA_ARRAY3D_DESCRIPTOR d;
    CUcontext ctx;
    cudaError_t e = rt_ctx(&ctx);
    if (e)
        return e;
    if (!array)
        return rt_set(cudaErrorInvalidValue);
    if ((e = rt_array3d_desc(desc, extent, flags, &d)))
        return rt_set(e);
    return rt_set(rt_from(cuArray3DCreate((CUarray *)array, &d)));
}

/* Bytes per element of array a. */
static cudaError_t element_size(cudaArray_const_t a, size_t *size)
{
    struct cudaChannelFormatDesc d;
    struct cudaExtent e;
    unsigned flags;
    cudaError_t err = cudaArrayGetInfo(&d, &e, &flags, (cudaArray_t)a);
    if (!err)
        *size = (size_t)(d.x + d.y + d.z + d.w) / 8;
    return err;
}

/* The driver's memory type of one side of a copy of `kind` (dst: the destination side). */
static CUmemorytype side_type(enum cudaMemcpyKind kind, int dst)
{
    switch (kind) {
    case cudaMemcpyHostToHost: return CU_MEMORYTYPE_HOST;
    case cudaMemcpyHostToDevice: return dst ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    case cudaMemcpyDeviceToHost: return dst ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
    case cudaMemcpyDeviceToDevice: return CU_MEMORYTYPE_DEVICE;
    default: return CU_MEMORYTYPE_UNIFIED;
    }
}

/* One side of a 3D copy in the driver's terms: an array (x in elements of es bytes) or
 * linear memory (x in bytes). */
static void side(cudaArray_const_t arr, const struct cudaPitchedPtr *ptr, struct cudaPos pos,
                 CUmemorytype linear, size_t es, CUmemorytype *type, const void **host,
                 CUdeviceptr *dev, CUarray *array, size_t *x, size_t *pitch, size_t *height)
{
    *x = arr ? pos.x * es : pos.x;
    if (arr) {
        *type = CU_MEMORYTYPE_ARRAY;
        *array = (CUarray)arr;
        return;
    }
    *type = linear;
    *host = ptr->ptr;
    *dev = (CUdeviceptr)(uintptr_t)ptr->ptr;
    *pitch = ptr->pitch;
    *height = ptr->ysize;
}

/* A cudaMemcpy3DParms copy as libcuda's cuMemcpy3D[Async]: with an array on either side the
 * width and the array's position count in elements, otherwise in bytes. */
cudaError_t rt_copy_3d(const struct cudaMemcpy3DParms *p, cudaStream_t s, int async)
{
    size_t es = 1;
    int arrays = p->srcArray || p->dstArray;
    cudaError_t e = arrays ? element_size(p->srcArray ? p->srcArray : p->dstArray, &es)
                           : cudaSuccess;
    if (e)
        return e;
    if ((unsigned)p->kind > cudaMemcpyDefault)
        return rt_set(cudaErrorInvalidMemcpyDirection);
    CUDA_MEMCPY3D c = {.WidthInBytes = p->extent.width * es,
                       .Height = arrays && !p->extent.height ? 1 : p->extent.height,
                       .Depth = arrays && !p->extent.depth ? 1 : p->extent.depth,
                       .srcY = p->srcPos.y, .srcZ = p->srcPos.z,
                       .dstY = p->dstPos.y, .dstZ = p->dstPos.z};
    const void *dst_host = NULL;
    side(p->srcArray, &p->srcPtr, p->srcPos, side_type(p->kind, 0), es, &c.srcMemoryType,
         &c.srcHost, &c.srcDevice, &c.srcArray, &c.srcXInBytes, &c.srcPitch, &c.srcHeight);
    side(p->dstArray, &p->dstPtr, p->dstPos, side_type(p->kind, 1), es, &c.dstMemoryType,
         &dst_host, &c.dstDevice, &c.dstArray, &c.dstXInBytes, &c.dstPitch, &c.dstHeight);
    c.dstHost = (void *)dst_host;
    return rt_set(rt_from(async ? cuMemcpy3DAsync(&c, s) : cuMemcpy3D(&c)));
}
