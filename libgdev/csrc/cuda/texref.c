/* Texture and surface references, the legacy binding of textures (deprecated since CUDA
 * 11): modules here have none (PTX .texref is not supported; texture objects are), so
 * cuModuleGetTexRef/GetSurfRef find nothing; cuTexRefCreate makes a reference whose state the
 * setters and getters keep, which no kernel can read, and which cuParamSetTexRef refuses, as
 * CUDA wants references from cuModuleGetTexRef there.  Programs that look every entry point
 * up by name (legacy.c) find them all. */
#include <stdlib.h>

#include "cuda_internal.h"

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

/* CUDA 4.0's name of the same call (cuda.h's cuTexRefSetAddress2D is the _v3 above). */
API CUresult legacy_tex_set_address_2d_v2(CUtexref r, const CUDA_ARRAY_DESCRIPTOR *d,
                                          CUdeviceptr p, size_t pitch)
    __asm__("cuTexRefSetAddress2D_v2");
API CUresult legacy_tex_set_address_2d_v2(CUtexref r, const CUDA_ARRAY_DESCRIPTOR *d,
                                          CUdeviceptr p, size_t pitch)
{
    return cuTexRefSetAddress2D(r, d, p, pitch);
}

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
