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
    CUDA_ARRAY3D_DESCRIPTOR d;
    CUcontext ctx;
    cudaError_t e = rt_ctx(&ctx);
    if (e)
        return e;
    if (!mipmappedArray)
        return rt_set(cudaErrorInvalidValue);
    if ((e = rt_array3d_desc(desc, extent, flags, &d)))
        return rt_set(e);
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
