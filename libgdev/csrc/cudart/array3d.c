/* cudaMalloc3DArray and 3D copies with CUDA arrays, for the arrays the driver has: 1D and 2D
 * (depth 0).  A 3D, layered, cubemap, gather or sparse array is cudaErrorNotSupported, as is
 * a copy of more than one slice to or from an array.  An array side of a copy counts in
 * elements (position and width), a linear side in bytes, as CUDA defines cudaMemcpy3DParms. */
#include <stdint.h>

#include "cudart_internal.h"

API cudaError_t cudaMalloc3DArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc,
                                  struct cudaExtent extent, unsigned int flags)
{
    const unsigned known = cudaArrayLayered | cudaArraySurfaceLoadStore | cudaArrayCubemap
                           | cudaArrayTextureGather | cudaArrayColorAttachment
                           | cudaArraySparse | cudaArrayDeferredMapping;
    if (!array || !desc || !extent.width || (flags & ~known))
        return rt_set(cudaErrorInvalidValue);
    if (extent.depth || (flags & ~(unsigned)cudaArraySurfaceLoadStore))
        return rt_set(cudaErrorNotSupported);
    return cudaMallocArray(array, desc, extent.width, extent.height, flags);
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

static const uint8_t *linear_at(const struct cudaPitchedPtr *p, struct cudaPos pos)
{
    return (const uint8_t *)p->ptr + pos.y * p->pitch + pos.x;
}

/* One slice (extent.depth <= 1) with an array on either side or both. */
cudaError_t rt_copy_3d_array(const struct cudaMemcpy3DParms *p, cudaStream_t s, int async)
{
    size_t es = 0, rows = p->extent.height ? p->extent.height : 1;
    cudaError_t e = element_size(p->srcArray ? p->srcArray : p->dstArray, &es);
    if (e)
        return e;
    if (p->extent.depth > 1 || p->srcPos.z || p->dstPos.z)
        return rt_set(cudaErrorNotSupported);
    size_t width = p->extent.width * es;
    if (async && (e = cudaStreamSynchronize(s))) /* in order after the stream's work */
        return e;
    if (p->srcArray && p->dstArray)
        return cudaMemcpy2DArrayToArray(p->dstArray, p->dstPos.x * es, p->dstPos.y,
                                        p->srcArray, p->srcPos.x * es, p->srcPos.y, width,
                                        rows, p->kind);
    if (p->dstArray)
        return cudaMemcpy2DToArray(p->dstArray, p->dstPos.x * es, p->dstPos.y,
                                   linear_at(&p->srcPtr, p->srcPos), p->srcPtr.pitch, width,
                                   rows, p->kind);
    return cudaMemcpy2DFromArray((void *)linear_at(&p->dstPtr, p->dstPos), p->dstPtr.pitch,
                                 p->srcArray, p->srcPos.x * es, p->srcPos.y, width, rows,
                                 p->kind);
}
