/* cuInit and devices: a CUdevice is a vGPU minor, as in Gdev; names, memory (the vGPU's
 * share), MP count and compute capability come from gquery on a short-lived handle. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

static int initialized;
static int device_count;

int cu_initialized(void)
{
    return initialized;
}

API CUresult cuInit(unsigned int flags)
{
    if (flags)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuInit: flags must be 0");
    if (gdevice_count(&device_count) < 0) {
        static int said;   /* what is missing and how to start it */
        cu_notice(&said, "cuInit: %s", gdev_last_error());
        return cu_fail(CUDA_ERROR_NO_DEVICE, "cuInit: %s", gdev_last_error());
    }
    if (device_count <= 0)
        return cu_fail(CUDA_ERROR_NO_DEVICE, "cuInit: gdevd serves no virtual GPU");
    initialized = 1;
    return CUDA_SUCCESS;
}

API CUresult cuDriverGetVersion(int *version)
{
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    *version = GDEV_CUDA_VERSION;
    return CUDA_SUCCESS;
}

/* Every entry point but cuInit and the version and error queries needs cuInit first. */
#define NEED_INIT() do { if (!initialized) return CUDA_ERROR_NOT_INITIALIZED; } while (0)

API CUresult cuDeviceGetCount(int *count)
{
    NEED_INIT();
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = device_count;
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    NEED_INIT();
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (ordinal < 0 || ordinal >= device_count)
        return cu_fail(CUDA_ERROR_INVALID_DEVICE, "cuDeviceGet: %d of %d", ordinal,
                       device_count);
    *device = ordinal;
    return CUDA_SUCCESS;
}

/* gquery on a short-lived handle of device dev. */
static CUresult query(CUdevice dev, uint32_t type, uint64_t *out)
{
    Ghandle h;
    int err;
    NEED_INIT();
    if (dev < 0 || dev >= device_count)
        return CUDA_ERROR_INVALID_DEVICE;
    h = gopen(dev);
    if (!h)
        return cu_fail(CUDA_ERROR_INVALID_DEVICE, "%s", gdev_last_error());
    err = gquery(h, type, out);
    gclose(h);
    return cu_error(err);
}

API CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    static const char n[] = "Gdev Emulated GPU";
    NEED_INIT();
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= device_count)
        return CUDA_ERROR_INVALID_DEVICE;
    strncpy(name, n, (size_t)len - 1);
    name[len - 1] = '\0';
    return CUDA_SUCCESS;
}

API CUresult cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
    uint64_t v;
    CUresult r;
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    r = query(dev, GDEV_QUERY_DEVICE_MEM_SIZE, &v);
    if (!r)
        *bytes = v;
    return r;
}

API CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
    uint64_t v;
    CUresult r;
    if (!major || !minor)
        return CUDA_ERROR_INVALID_VALUE;
    r = query(dev, GDEV_QUERY_COMPUTE_CAPABILITY, &v);
    if (!r) {
        *major = (int)(v >> 16);
        *minor = (int)(v & 0xffff);
    }
    return r;
}

/* The texture and surface limits: the daemon's (gdevd/gpu/texture.py), which are CUDA's for
 * compute capability 7.5; 0 for what the device lacks (concurrent managed access,
 * multi-device cooperative launch, mipmapped arrays, ...). */
static int texture_attribute(CUdevice_attribute a)
{
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH: return 1 << 17;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT: return 1 << 16;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH: return 1 << 21;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH: return 1 << 27;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH: case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH: case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT: case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH:
        return 1 << 14;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_HEIGHT:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH: return 1 << 15;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_LAYERS:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS: return 2048;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS: return 2046;
    case CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT: return 512;
    default: return 0;
    }
}

static int static_attribute(CUdevice_attribute a)
{
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
        return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 0x7fffffff;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
        return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return 48 * 1024;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: return 64 * 1024;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: return 0x7fffffff;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: return 65536;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return 1590000;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: return 512;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT: return 32; /* cuMemAllocPitch: 256 */
    case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: return 1;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: return 5001000;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 256;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: return 4 * 1024 * 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: return 1024;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: return 2;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: return 64 * 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: return 65536;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: return 64 * 1024;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: return 1; /* cuMemAllocManaged (memory.c) */
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: return 1; /* streams' kernels overlap */
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: return 1; /* cuLaunchCooperativeKernel */
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: return 1; /* vmm.c */
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED: return 1; /* interprocess events (ipc.c) */
    /* drvapi: pools (pool.c), stream memory operations (streamops.c), registration */
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES: /* poolipc.c */
        return CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS: return 1;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR: return 1;
    case CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES: return 1;
    case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED: return 1; /* for copies (hostmem.c) */
    case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED: return 1; /* at slice boundaries */
    case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED: return 1;
    default: return texture_attribute(a);
    }
}

API CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    uint64_t v;
    CUresult r = CUDA_SUCCESS;
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        r = query(dev, GDEV_NVIDIA_QUERY_MP_COUNT, &v);
        break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
        r = query(dev, GDEV_QUERY_COMPUTE_CAPABILITY, &v);
        v = attrib == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ? v >> 16 : v & 0xffff;
        break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: /* device N on bus N + 1 (ids.c) */
        NEED_INIT();
        if (dev < 0 || dev >= device_count)
            return CUDA_ERROR_INVALID_DEVICE;
        v = (uint64_t)dev + 1;
        break;
    default:
        NEED_INIT();
        if (dev < 0 || dev >= device_count)
            return CUDA_ERROR_INVALID_DEVICE;
        v = (uint64_t)static_attribute(attrib);
    }
    if (!r)
        *pi = (int)v;
    return r;
}

/* The widest 1D texture over linear memory, in elements: the device's limit for every
 * format and channel count (1, 2 or 4 channels of a CUarray_format). */
API CUresult cuDeviceGetTexture1DLinearMaxWidth(size_t *width, CUarray_format format,
                                                unsigned channels, CUdevice dev)
{
    int v = 0;
    CUresult r = cu_valid_device(dev);
    if (!r && (!width || !cu_element_size(format) ||
               (channels != 1 && channels != 2 && channels != 4)))
        r = CUDA_ERROR_INVALID_VALUE;
    if (!r)
        r = cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH, dev);
    if (!r)
        *width = (size_t)v;
    return r;
}

CUresult cu_valid_device(CUdevice dev)
{
    NEED_INIT();
    return dev < 0 || dev >= device_count ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
}

int cu_device_count(void)
{
    return device_count;
}
