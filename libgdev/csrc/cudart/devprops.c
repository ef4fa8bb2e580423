/* What the runtime says of a device: cudaDeviceGetAttribute (the driver's attributes, whose
 * numbers cudaDevAttr* shares), cudaGetDeviceProperties built from them, and the 1D linear
 * texture limit. */
#include <string.h>

#include "cudart_internal.h"

API cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int dev)
{
    int n;
    cudaError_t e = cudaGetDeviceCount(&n); /* the driver initialized */
    if (e)
        return e;
    /* cudaDevAttr* values are the driver's CU_DEVICE_ATTRIBUTE_* numbers */
    return rt_set(rt_from(cuDeviceGetAttribute(value, (CUdevice_attribute)attr, dev)));
}

static int attr(CUdevice_attribute a, int dev)
{
    int v = 0;
    cuDeviceGetAttribute(&v, a, dev);
    return v;
}

/* The widest 1D texture over linear memory, in elements (libcuda's answer). */
API cudaError_t cudaDeviceGetTexture1DLinearMaxWidth(size_t *width,
                                                     const struct cudaChannelFormatDesc *fmt,
                                                     int dev)
{
    CUarray_format f = CU_AD_FORMAT_FLOAT;
    unsigned channels = 0;
    cudaError_t e = rt_valid_device(dev);
    if (!e && (!width || !fmt || !rt_channel_format(fmt, &f, &channels)))
        e = cudaErrorInvalidValue;
    if (e)
        return rt_set(e);
    return rt_set(rt_from(cuDeviceGetTexture1DLinearMaxWidth(width, f, channels, dev)));
}

/* The texture and surface limits of cudaDeviceProp, libcuda's attributes. */
static void texture_limits(struct cudaDeviceProp *p, int dev)
{
#define A(name) attr(CU_DEVICE_ATTRIBUTE_##name, dev)
    p->maxTexture1D = A(MAXIMUM_TEXTURE1D_WIDTH);
    p->maxTexture2D[0] = A(MAXIMUM_TEXTURE2D_WIDTH);
    p->maxTexture2D[1] = A(MAXIMUM_TEXTURE2D_HEIGHT);
    p->maxTexture2DLinear[0] = A(MAXIMUM_TEXTURE2D_LINEAR_WIDTH);
    p->maxTexture2DLinear[1] = A(MAXIMUM_TEXTURE2D_LINEAR_HEIGHT);
    p->maxTexture2DLinear[2] = A(MAXIMUM_TEXTURE2D_LINEAR_PITCH);
    p->maxTexture2DGather[0] = A(MAXIMUM_TEXTURE2D_GATHER_WIDTH);
    p->maxTexture2DGather[1] = A(MAXIMUM_TEXTURE2D_GATHER_HEIGHT);
    for (int i = 0; i < 3; i++) {
        p->maxTexture3D[i] = A(MAXIMUM_TEXTURE3D_WIDTH);
        p->maxSurface3D[i] = A(MAXIMUM_SURFACE3D_WIDTH);
    }
    p->maxTextureCubemap = A(MAXIMUM_TEXTURECUBEMAP_WIDTH);
    p->maxTexture1DLayered[0] = A(MAXIMUM_TEXTURE1D_LAYERED_WIDTH);
    p->maxTexture1DLayered[1] = A(MAXIMUM_TEXTURE1D_LAYERED_LAYERS);
    p->maxTexture2DLayered[0] = p->maxTexture2DLayered[1] = A(MAXIMUM_TEXTURE2D_LAYERED_WIDTH);
    p->maxTexture2DLayered[2] = A(MAXIMUM_TEXTURE2D_LAYERED_LAYERS);
    p->maxTextureCubemapLayered[0] = A(MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH);
    p->maxTextureCubemapLayered[1] = A(MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS);
    p->maxSurface1D = A(MAXIMUM_SURFACE1D_WIDTH);
    p->maxSurface2D[0] = A(MAXIMUM_SURFACE2D_WIDTH);
    p->maxSurface2D[1] = A(MAXIMUM_SURFACE2D_HEIGHT);
    p->maxSurface1DLayered[0] = A(MAXIMUM_SURFACE1D_LAYERED_WIDTH);
    p->maxSurface1DLayered[1] = A(MAXIMUM_SURFACE1D_LAYERED_LAYERS);
    p->maxSurface2DLayered[0] = p->maxSurface2DLayered[1] = A(MAXIMUM_SURFACE2D_LAYERED_WIDTH);
    p->maxSurface2DLayered[2] = A(MAXIMUM_SURFACE2D_LAYERED_LAYERS);
    p->maxSurfaceCubemap = A(MAXIMUM_SURFACECUBEMAP_WIDTH);
    p->maxSurfaceCubemapLayered[0] = A(MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH);
    p->maxSurfaceCubemapLayered[1] = A(MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS);
    p->surfaceAlignment = (size_t)A(SURFACE_ALIGNMENT);
#undef A
}

API cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int dev)
{
    size_t mem = 0;
    int n;
    cudaError_t e = cudaGetDeviceCount(&n); /* the driver initialized */
    if (e)
        return e;
    if ((e = rt_from(cuDeviceTotalMem(&mem, dev))))
        return rt_set(e);
    memset(p, 0, sizeof *p);
    cuDeviceGetName(p->name, sizeof p->name, dev);
    p->totalGlobalMem = mem;
    p->sharedMemPerBlock = (size_t)attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, dev);
    p->regsPerBlock = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, dev);
    p->warpSize = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev);
    p->memPitch = (size_t)attr(CU_DEVICE_ATTRIBUTE_MAX_PITCH, dev);
    p->maxThreadsPerBlock = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, dev);
    for (int i = 0; i < 3; i++) {
        p->maxThreadsDim[i] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X + i, dev);
        p->maxGridSize[i] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X + i, dev);
    }
    p->totalConstMem = (size_t)attr(CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, dev);
    p->major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    p->minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    p->textureAlignment = (size_t)attr(CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, dev);
    p->multiProcessorCount = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    p->canMapHostMemory = 1;
    p->unifiedAddressing = 1;
    p->managedMemory = attr(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, dev);
    p->concurrentKernels = attr(CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, dev);
    p->memoryBusWidth = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, dev);
    p->l2CacheSize = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev);
    p->maxThreadsPerMultiProcessor = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, dev);
    p->asyncEngineCount = attr(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, dev);
    p->sharedMemPerMultiprocessor =
        (size_t)attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, dev);
    p->regsPerMultiprocessor = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, dev);
    p->sharedMemPerBlockOptin =
        (size_t)attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev);
    p->maxBlocksPerMultiProcessor = 16;
    p->pciBusID = attr(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev); /* libcuda's ids.c */
    p->cooperativeLaunch = attr(CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, dev);
    p->texturePitchAlignment = (size_t)attr(CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, dev);
    p->memoryPoolsSupported = attr(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, dev);
    p->hostRegisterSupported = attr(CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, dev);
    cuDeviceGetUuid((CUuuid *)&p->uuid, dev); /* libcuda's ctxinfo.c */
    texture_limits(p, dev);
    p->globalL1CacheSupported = p->localL1CacheSupported = 1;
    p->computePreemptionSupported = 1; /* Gdev preempts running kernels at slice boundaries */
    return cudaSuccess;
}
