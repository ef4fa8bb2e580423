/* The legacy entry points a program may look up by name (dlsym), as NVIDIA's
 * matrixMulDynlinkJIT sample does for all of them before it starts:
 * - the unversioned names whose form is the _v2 one on 64-bit machines (cuCtxDestroy,
 *   cuCtxPushCurrent, ...): the same function;
 * - the CUDA 3.1 forms with 32-bit device pointers and sizes (cuMemAlloc, cuMemcpyHtoD,
 *   cuArrayCreate, ...): CUDA_ERROR_NOT_SUPPORTED naming the _v2 form every program built
 *   with cuda.h since CUDA 3.2 calls;
 * - cuCtxAttach/cuCtxDetach, a usage count on the current context;
 * - texture and surface references: modules here have none (PTX .texref is not supported;
 *   texture objects are), so cuModuleGetTexRef/GetSurfRef find nothing; cuTexRefCreate makes
 *   a reference whose state the setters and getters keep, which no kernel can read, and which
 *   cuParamSetTexRef refuses, as CUDA wants references from cuModuleGetTexRef there;
 * - graphics interop: no graphics resource can be registered, so every handle is invalid;
 * - cuGetExportTable: NVIDIA's private tables (what the static runtime needs) do not exist. */
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

/* ---- texture and surface references ---------------------------------------------------- */

struct CUtexref_st {
    CUarray array;
    CUdeviceptr addr;
    size_t bytes, pitch;
    CUDA_ARRAY_DESCRIPTOR desc;
    CUarray_format format;
    int channels;
    CUaddress_mode am[3];
    CUfilter_mode filter, mip_filter;
    unsigned flags, max_aniso;
    float border[4], bias, min_clamp, max_clamp;
};

API CUresult cuModuleGetTexRef(CUtexref *ref, CUmodule mod, const char *name)
{
    if (!ref || !mod || !name)
        return CUDA_ERROR_INVALID_VALUE;
    return cu_fail(CUDA_ERROR_NOT_FOUND, "cuModuleGetTexRef(%s): texture references (.texref) "
                   "are not supported; use texture objects", name);
}

API CUresult cuModuleGetSurfRef(CUsurfref *ref, CUmodule mod, const char *name)
{
    if (!ref || !mod || !name)
        return CUDA_ERROR_INVALID_VALUE;
    return cu_fail(CUDA_ERROR_NOT_FOUND, "cuModuleGetSurfRef(%s): surface references (.surfref) "
                   "are not supported; use surface objects", name);
}

API CUresult cuSurfRefSetArray(CUsurfref ref, CUarray array, unsigned int flags)
{
    (void)ref, (void)array, (void)flags;
    return CUDA_ERROR_INVALID_HANDLE; /* only cuModuleGetSurfRef gives one */
}

API CUresult cuSurfRefGetArray(CUarray *array, CUsurfref ref)
{
    (void)array, (void)ref;
    return CUDA_ERROR_INVALID_HANDLE;
}

API CUresult cuTexRefCreate(CUtexref *ref)
{
    if (!ref)
        return CUDA_ERROR_INVALID_VALUE;
    *ref = calloc(1, sizeof **ref);
    if (!*ref)
        return CUDA_ERROR_OUT_OF_MEMORY;
    (*ref)->format = CU_AD_FORMAT_FLOAT;
    (*ref)->channels = 1;
    return CUDA_SUCCESS;
}

API CUresult cuTexRefDestroy(CUtexref ref)
{
    if (!ref)
        return CUDA_ERROR_INVALID_HANDLE;
    free(ref);
    return CUDA_SUCCESS;
}

API CUresult cuParamSetTexRef(CUfunction f, int texunit, CUtexref ref)
{
    (void)f, (void)texunit, (void)ref;
    return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuParamSetTexRef: the reference must come from "
                   "cuModuleGetTexRef (texture references are not supported)");
}

/* Setters and getters of one field: a NULL reference is INVALID_HANDLE, a NULL out value
 * INVALID_VALUE. */
#define REF(r) do { if (!(r)) return CUDA_ERROR_INVALID_HANDLE; } while (0)
#define OUT(p) do { if (!(p)) return CUDA_ERROR_INVALID_VALUE; } while (0)

API CUresult cuTexRefSetArray(CUtexref r, CUarray a, unsigned int flags)
{
    REF(r);
    if (flags != CU_TRSA_OVERRIDE_FORMAT)
        return CUDA_ERROR_INVALID_VALUE;
    r->array = a;
    r->addr = 0;
    return CUDA_SUCCESS;
}

API CUresult cuTexRefGetArray(CUarray *a, CUtexref r)
{
    REF(r);
    OUT(a);
    if (!r->array)
        return CUDA_ERROR_INVALID_VALUE;
    *a = r->array;
    return CUDA_SUCCESS;
}

API CUresult cuTexRefSetAddress(size_t *offset, CUtexref r, CUdeviceptr p, size_t bytes)
{
    REF(r);
    r->addr = p;
    r->bytes = bytes;
    r->array = NULL;
    if (offset)
        *offset = 0;
    return CUDA_SUCCESS;
}

API CUresult cuTexRefGetAddress(CUdeviceptr *p, CUtexref r)
{
    REF(r);
    OUT(p);
    if (!r->addr)
        return CUDA_ERROR_INVALID_VALUE;
    *p = r->addr;
    return CUDA_SUCCESS;
}

API CUresult cuTexRefSetAddress2D(CUtexref r, const CUDA_ARRAY_DESCRIPTOR *d, CUdeviceptr p,
                                  size_t pitch)
{
    REF(r);
    OUT(d);
    r->desc = *d;
    r->addr = p;
    r->pitch = pitch;
    r->array = NULL;
    return CUDA_SUCCESS;
}

SAME(legacy_tex_set_address_2d_v2, "cuTexRefSetAddress2D_v2",
     (CUtexref r, const CUDA_ARRAY_DESCRIPTOR *d, CUdeviceptr p, size_t pitch),
     cuTexRefSetAddress2D(r, d, p, pitch))

API CUresult cuTexRefSetFormat(CUtexref r, CUarray_format fmt, int channels)
{
    REF(r);
    if (channels != 1 && channels != 2 && channels != 4)
        return CUDA_ERROR_INVALID_VALUE;
    r->format = fmt;
    r->channels = channels;
    return CUDA_SUCCESS;
}

API CUresult cuTexRefGetFormat(CUarray_format *fmt, int *channels, CUtexref r)
{
    REF(r);
    OUT(fmt);
    *fmt = r->format;
    if (channels)
        *channels = r->channels;
    return CUDA_SUCCESS;
}

API CUresult cuTexRefSetAddressMode(CUtexref r, int dim, CUaddress_mode am)
{
    REF(r);
    if (dim < 0 || dim > 2)
        return CUDA_ERROR_INVALID_VALUE;
    r->am[dim] = am;
    return CUDA_SUCCESS;
}

API CUresult cuTexRefGetAddressMode(CUaddress_mode *am, CUtexref r, int dim)
{
    REF(r);
    OUT(am);
    if (dim < 0 || dim > 2)
        return CUDA_ERROR_INVALID_VALUE;
    *am = r->am[dim];
    return CUDA_SUCCESS;
}

API CUresult cuTexRefSetFilterMode(CUtexref r, CUfilter_mode fm)
{
    REF(r);
    r->filter = fm;
    return CUDA_SUCCESS;
}

API CUresult cuTexRefGetFilterMode(CUfilter_mode *fm, CUtexref r)
{
    REF(r);
    OUT(fm);
    *fm = r->filter;
    return CUDA_SUCCESS;
}

API CUresult cuTexRefSetFlags(CUtexref r, unsigned int flags)
{
    REF(r);
    r->flags = flags;
    return CUDA_SUCCESS;
}

API CUresult cuTexRefGetFlags(unsigned int *flags, CUtexref r)
{
    REF(r);
    OUT(flags);
    *flags = r->flags;
    return CUDA_SUCCESS;
}

API CUresult cuTexRefSetBorderColor(CUtexref r, float *rgba)
{
    REF(r);
    OUT(rgba);
    for (int i = 0; i < 4; i++)
        r->border[i] = rgba[i];
    return CUDA_SUCCESS;
}

API CUresult cuTexRefGetBorderColor(float *rgba, CUtexref r)
{
    REF(r);
    OUT(rgba);
    for (int i = 0; i < 4; i++)
        rgba[i] = r->border[i];
    return CUDA_SUCCESS;
}

API CUresult cuTexRefSetMaxAnisotropy(CUtexref r, unsigned int aniso)
{
    REF(r);
    r->max_aniso = aniso;
    return CUDA_SUCCESS;
}

API CUresult cuTexRefGetMaxAnisotropy(int *aniso, CUtexref r)
{
    REF(r);
    OUT(aniso);
    *aniso = (int)r->max_aniso;
    return CUDA_SUCCESS;
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

API CUresult cuGetExportTable(const void **table, const CUuuid *id)
{
    if (!table || !id)
        return CUDA_ERROR_INVALID_VALUE;
    *table = NULL;
    return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "cuGetExportTable: NVIDIA's private driver tables "
                   "do not exist here (a program linked with the static runtime needs them: "
                   "build it with -cudart shared)");
}
