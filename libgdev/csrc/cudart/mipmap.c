/* Mipmapped arrays in the runtime API, over the driver's (cuda/mipmap.c):
 * cudaMallocMipmappedArray/cudaGetMipmappedArrayLevel/cudaFreeMipmappedArray; a
 * cudaMipmappedArray_t is the driver's CUmipmappedArray and each level a cudaArray_t, so
 * copies, surfaces and textures of one level are the arrays' own.  Flags as for
 * cudaMalloc3DArray (cudaArray* are the driver's CUDA_ARRAY3D_* values). */
#include "cudart_internal.h"

API cudaError_t cudaMallocMipmappedArray(cudaMipmappedArray_t *mipmappedArray,
                                         const struct cudaChannelFormatDesc *desc,
                                         struct cudaExtent extent, unsigned int numLevels,
                                         unsigned int flags)
{
    const unsigned ours = cudaArrayLayered | cudaArraySurfaceLoadStore | cudaArrayCubemap |
                          cudaArrayTextureGather;
    const unsigned known = ours | cudaArrayColorAttachment | cudaArraySparse |
                           cudaArrayDeferredMapping;
    CUDA_ARRAY3D_DESCRIPTOR d = {.Width = extent.width, .Height = extent.height,
                                 .Depth = extent.depth, .Flags = flags};
    CUcontext ctx;
    cudaError_t e = rt_ctx(&ctx);
    if (e)
        return e;
    if (!mipmappedArray || !desc || !extent.width || (flags & ~known))
        return rt_set(cudaErrorInvalidValue);
    if (flags & ~ours)
        return rt_set(cudaErrorNotSupported);
    if (!rt_channel_format(desc, &d.Format, &d.NumChannels))
        return rt_set(cudaErrorInvalidChannelDescriptor);
    return rt_set(rt_from(cuMipmappedArrayCreate((CUmipmappedArray *)mipmappedArray, &d,
                                                 numLevels)));
}

API cudaError_t cudaGetMipmappedArrayLevel(cudaArray_t *levelArray,
                                           cudaMipmappedArray_const_t mipmappedArray,
                                           unsigned int level)
{
    IN_CTX();
    CALL(cuMipmappedArrayGetLevel((CUarray *)levelArray, (CUmipmappedArray)mipmappedArray,
                                  level));
}

API cudaError_t cudaFreeMipmappedArray(cudaMipmappedArray_t mipmappedArray)
{
    if (!mipmappedArray)
        return cudaSuccess;
    IN_CTX();
    CALL(cuMipmappedArrayDestroy((CUmipmappedArray)mipmappedArray));
}
