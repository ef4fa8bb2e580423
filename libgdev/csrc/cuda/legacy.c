/* The legacy entry points a program may look up by name (dlsym), as NVIDIA's
 * matrixMulDynlinkJIT sample does for all of them before it starts:
 * - the unversioned names whose form is the _v2 one on 64-bit machines (cuCtxDestroy,
 *   cuCtxPushCurrent, ...): the same function;
 * - the CUDA 3.1 forms with 32-bit device pointers and sizes (cuMemAlloc, cuMemcpyHtoD,
 *   cuArrayCreate, ...): CUDA_ERROR_NOT_SUPPORTED naming the _v2 form every program built
 *   with cuda.h since CUDA 3.2 calls;
 * - cuCtxAttach/cuCtxDetach, a usage count on the current context;
 * - texture and surface references: texref.c;
 * - graphics interop: no graphics resource can be registered, so every handle is invalid.
 * (cuGetExportTable, what NVIDIA's static runtime needs: export.c.) */
#include <stdlib.h>

#include "cuda_internal.h"

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);

/* An unversioned name for the same function (asm label: cuda.h renames the C name). */
#define SAME(c_name, abi_name, params, args)             \
    API CUresult c_name params __asm__(abi_name);       \
    API CUresult c_name params { return args; }

SAME(legacy_ctx_create, "cuCtxCreate", (CUcontext *c, unsigned int f, CUdevice d),
     cuCtxCreate_v2(c, f, d))
SAME(legacy_ctx_destroy, "cuCtxDestroy", (CUcontext c), cuCtxDestroy(c))
SAME(legacy_ctx_push, "cuCtxPushCurrent", (CUcontext c), cuCtxPushCurrent(c))
SAME(legacy_ctx_pop, "cuCtxPopCurrent", (CUcontext *c), cuCtxPopCurrent(c))
SAME(legacy_stream_destroy, "cuStreamDestroy", (CUstream s), cuStreamDestroy(s))
SAME(legacy_event_destroy, "cuEventDestroy", (CUevent e), cuEventDestroy(e))
SAME(legacy_event_elapsed, "cuEventElapsedTime", (float *ms, CUevent a, CUevent b),
     cuEventElapsedTime(ms, a, b))
SAME(legacy_host_register, "cuMemHostRegister", (void *p, size_t n, unsigned int f),
     cuMemHostRegister(p, n, f))
SAME(legacy_map_flags, "cuGraphicsResourceSetMapFlags", (CUgraphicsResource r, unsigned int f),
     cuGraphicsResourceSetMapFlags(r, f))
SAME(legacy_ipc_open, "cuIpcOpenMemHandle", (CUdeviceptr *p, CUipcMemHandle h, unsigned int f),
     cuIpcOpenMemHandle(p, h, f))

/* A CUDA 3.1 entry point (32-bit device pointers and sizes): refused, naming its successor. */
#define V1(c_name, abi_name)                                                               \
    API CUresult c_name(void) __asm__(abi_name);                                          \
    API CUresult c_name(void)                                                              \
    {                                                                                      \
        return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "%s: the CUDA 3.1 form with 32-bit "      \
                       "device pointers; programs built with cuda.h call %s_v2", abi_name, \
                       abi_name);                                                          \
    }

V1(v1_device_total_mem, "cuDeviceTotalMem") V1(v1_mem_alloc, "cuMemAlloc")
V1(v1_mem_alloc_pitch, "cuMemAllocPitch") V1(v1_mem_free, "cuMemFree")
V1(v1_mem_get_info, "cuMemGetInfo") V1(v1_mem_get_address_range, "cuMemGetAddressRange")
V1(v1_mem_alloc_host, "cuMemAllocHost") V1(v1_host_get_device_pointer, "cuMemHostGetDevicePointer")
V1(v1_module_get_global, "cuModuleGetGlobal") V1(v1_array_create, "cuArrayCreate")
V1(v1_array_get_descriptor, "cuArrayGetDescriptor") V1(v1_array3d_create, "cuArray3DCreate")
V1(v1_array3d_get_descriptor, "cuArray3DGetDescriptor") V1(v1_memcpy_htod, "cuMemcpyHtoD")
V1(v1_memcpy_dtoh, "cuMemcpyDtoH") V1(v1_memcpy_dtod, "cuMemcpyDtoD")
V1(v1_memcpy_dtoa, "cuMemcpyDtoA") V1(v1_memcpy_atod, "cuMemcpyAtoD")
V1(v1_memcpy_htoa, "cuMemcpyHtoA") V1(v1_memcpy_atoh, "cuMemcpyAtoH")
V1(v1_memcpy_atoa, "cuMemcpyAtoA") V1(v1_memcpy_2d, "cuMemcpy2D")
V1(v1_memcpy_2d_unaligned, "cuMemcpy2DUnaligned") V1(v1_memcpy_3d, "cuMemcpy3D")
V1(v1_memcpy_htod_async, "cuMemcpyHtoDAsync") V1(v1_memcpy_dtoh_async, "cuMemcpyDtoHAsync")
V1(v1_memcpy_dtod_async, "cuMemcpyDtoDAsync") V1(v1_memcpy_htoa_async, "cuMemcpyHtoAAsync")
V1(v1_memcpy_atoh_async, "cuMemcpyAtoHAsync") V1(v1_memcpy_2d_async, "cuMemcpy2DAsync")
V1(v1_memcpy_3d_async, "cuMemcpy3DAsync") V1(v1_memset_d8, "cuMemsetD8")
V1(v1_memset_d16, "cuMemsetD16") V1(v1_memset_d32, "cuMemsetD32")
V1(v1_memset_d2d8, "cuMemsetD2D8") V1(v1_memset_d2d16, "cuMemsetD2D16")
V1(v1_memset_d2d32, "cuMemsetD2D32") V1(v1_tex_set_address, "cuTexRefSetAddress")
V1(v1_tex_get_address, "cuTexRefGetAddress") V1(v1_tex_set_address_2d, "cuTexRefSetAddress2D")
V1(v1_graphics_mapped_pointer, "cuGraphicsResourceGetMappedPointer")

/* ---- cuCtxAttach / cuCtxDetach ------------------------------------------------------- */

API CUresult cuCtxAttach(CUcontext *pctx, unsigned int flags)
{
    CURRENT(c);
    if (!pctx || flags)
        return CUDA_ERROR_INVALID_VALUE;
    __atomic_add_fetch(&c->attached, 1, __ATOMIC_RELAXED);
    *pctx = c;
    return CUDA_SUCCESS;
}

/* The last detach (the creator's use included) destroys it. */
API CUresult cuCtxDetach(CUcontext ctx)
{
    CURRENT(c);
    if (!ctx || ctx != c)
        return CUDA_ERROR_INVALID_CONTEXT;
    unsigned n = __atomic_load_n(&c->attached, __ATOMIC_RELAXED);
    while (n && !__atomic_compare_exchange_n(&c->attached, &n, n - 1, 0, __ATOMIC_RELAXED,
                                             __ATOMIC_RELAXED))
        ;
    return n ? CUDA_SUCCESS : cuCtxDestroy(ctx);
}

/* ---- graphics interop: nothing can be registered, so no resource handle is valid ------- */

API CUresult cuGraphicsUnregisterResource(CUgraphicsResource res)
{
    (void)res;
    return CUDA_ERROR_INVALID_HANDLE;
}

API CUresult cuGraphicsResourceSetMapFlags(CUgraphicsResource res, unsigned int flags)
{
    (void)res, (void)flags;
    return CUDA_ERROR_INVALID_HANDLE;
}

/* Mapping or unmapping no resources succeeds; any resource is invalid. */
static CUresult map_resources(unsigned int count, CUgraphicsResource *res)
{
    return !count ? CUDA_SUCCESS : !res ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE;
}

API CUresult cuGraphicsMapResources(unsigned int count, CUgraphicsResource *res, CUstream s)
{
    (void)s;
    return map_resources(count, res);
}

API CUresult cuGraphicsUnmapResources(unsigned int count, CUgraphicsResource *res, CUstream s)
{
    (void)s;
    return map_resources(count, res);
}

API CUresult cuGraphicsResourceGetMappedPointer(CUdeviceptr *p, size_t *size,
                                                CUgraphicsResource res)
{
    (void)p, (void)size, (void)res;
    return CUDA_ERROR_INVALID_HANDLE;
}

API CUresult cuGraphicsSubResourceGetMappedArray(CUarray *a, CUgraphicsResource res,
                                                 unsigned int index, unsigned int level)
{
    (void)a, (void)res, (void)index, (void)level;
    return CUDA_ERROR_INVALID_HANDLE;
}
