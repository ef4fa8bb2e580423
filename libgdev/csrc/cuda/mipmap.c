/* Mipmapped arrays: cuMipmappedArrayCreate/GetLevel/Destroy, and the mipmap fields of a
 * texture object over one (texture.c).  A mipmapped array is one device allocation holding
 * its levels one after the other, each packed as array.c packs an array (pitch = one row of
 * texels, slice pitch = pitch x rows); level l halves the width and the height (floored, at
 * least 1; a 1D array keeps height 0) and, for a 3D array, the depth, while layers and
 * cubemap faces stay: the layout gdevd/gpu/texture.py's mip_layout reads, so the daemon
 * needs only level 0's descriptor and the level count.  Each level is a CUarray (for
 * copies, surfaces and textures of one level) owned by the mipmapped array: cuArrayDestroy
 * refuses it, cuMipmappedArrayDestroy frees every level at once.  Records stay until their
 * context goes (a second destroy is an error rather than a use after free). */
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

struct CUmipmappedArray_st {
    CUcontext ctx;
    CUdeviceptr ptr;
    unsigned levels;
    int destroyed;
    struct CUarray_st *level; /* levels arrays */
    struct CUmipmappedArray_st *next;
};

static pthread_mutex_t mip_lock = PTHREAD_MUTEX_INITIALIZER;
static struct CUmipmappedArray_st *mipmaps; /* guarded by mip_lock */

/* Levels CUDA allows for d: 1 + floor(log2(the largest extent that shrinks)). */
static unsigned most_levels(const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    size_t m = d->Width > d->Height ? d->Width : d->Height;
    unsigned n = 0;
    if (!(d->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)) && d->Depth > m)
        m = d->Depth;
    while (m >> n)
        n++;
    return n;
}

/* Fill m's level records from descriptor d (checked); the bytes all levels take. */
static size_t lay_out(struct CUmipmappedArray_st *m, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    size_t texel = cu_element_size(d->Format) * d->NumChannels, off = 0;
    int shrink_depth = d->Depth && !(d->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP));
    for (unsigned l = 0; l < m->levels; l++) {
        struct CUarray_st *a = &m->level[l];
        size_t w = d->Width >> l ? d->Width >> l : 1;
        size_t h = d->Height >> l ? d->Height >> l : 1;
        size_t z = shrink_depth && d->Depth >> l ? d->Depth >> l : shrink_depth ? 1 : d->Depth;
        a->ctx = m->ctx;
        a->desc = (CUDA_ARRAY_DESCRIPTOR){.Width = w, .Height = d->Height ? h : 0,
                                          .Format = d->Format, .NumChannels = d->NumChannels};
        a->depth = z;
        a->flags = d->Flags;
        a->pitch = w * texel;
        a->rows = d->Height ? h : 1;
        a->slices = z ? z : 1;
        a->slice_pitch = a->pitch * a->rows;
        a->owner = m;
        a->ptr = off; /* an offset until the allocation exists */
        off += a->slice_pitch * a->slices;
    }
    return off;
}

API CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d,
                                    unsigned int numMipmapLevels)
{
    const unsigned ours = CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST |
                          CUDA_ARRAY3D_CUBEMAP | CUDA_ARRAY3D_TEXTURE_GATHER;
    struct CUmipmappedArray_st *m;
    CUcontext c = NULL;
    CUresult r = cu_live(&c);
    size_t bytes;
    if (r)
        return r;
    if (!pHandle || !d || !cu_element_size(d->Format) || !d->Width ||
        (d->NumChannels != 1 && d->NumChannels != 2 && d->NumChannels != 4) ||
        !cu_array_within_limits(d) || !numMipmapLevels || numMipmapLevels > most_levels(d))
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuMipmappedArrayCreate: bad descriptor "
                       "or %u levels", numMipmapLevels);
    if (d->Flags & ~ours)
        return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "cuMipmappedArrayCreate: flags 0x%x",
                       d->Flags & ~ours);
    m = calloc(1, sizeof *m);
    if (!m || !(m->level = calloc(numMipmapLevels, sizeof *m->level))) {
        free(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    m->ctx = c;
    m->levels = numMipmapLevels;
    bytes = lay_out(m, d);
    if ((r = cuMemAlloc(&m->ptr, bytes))) {
        free(m->level);
        free(m);
        return r;
    }
    for (unsigned l = 0; l < m->levels; l++)
        m->level[l].ptr += m->ptr;
    pthread_mutex_lock(&mip_lock);
    m->next = mipmaps;
    mipmaps = m;
    pthread_mutex_unlock(&mip_lock);
    *pHandle = m;
    return CUDA_SUCCESS;
}

/* The live mipmapped array m of context c, or NULL. */
static struct CUmipmappedArray_st *live(CUcontext c, CUmipmappedArray m)
{
    struct CUmipmappedArray_st *p;
    pthread_mutex_lock(&mip_lock);
    for (p = mipmaps; p && p != m; p = p->next)
        ;
    pthread_mutex_unlock(&mip_lock);
    return p && p->ctx == c && !p->destroyed ? p : NULL;
}

/* The current context's live mipmapped array h, or its failure (INVALID_HANDLE if none). */
static CUresult current_mip(CUmipmappedArray h, struct CUmipmappedArray_st **m)
{
    CUcontext c = NULL;
    CUresult r = cu_current(&c);
    if (r)
        return r;
    *m = live(c, h);
    return *m ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

API CUresult cuMipmappedArrayGetLevel(CUarray *pLevelArray, CUmipmappedArray hMipmappedArray,
                                      unsigned int level)
{
    struct CUmipmappedArray_st *m;
    CUresult r = current_mip(hMipmappedArray, &m);
    if (r)
        return r;
    if (!pLevelArray || level >= m->levels)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuMipmappedArrayGetLevel: level %u of %u",
                       level, m->levels);
    *pLevelArray = &m->level[level];
    return CUDA_SUCCESS;
}

API CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
    struct CUmipmappedArray_st *m;
    CUresult r = current_mip(hMipmappedArray, &m);
    if (r)
        return r;
    if ((r = cuMemFree(m->ptr)))
        return r;
    m->destroyed = 1;
    for (unsigned l = 0; l < m->levels; l++)
        m->level[l].destroyed = 1;
    return CUDA_SUCCESS;
}

CUarray cu_mipmap_level0(CUcontext c, CUmipmappedArray m)
{
    struct CUmipmappedArray_st *p = live(c, m);
    return p ? &p->level[0] : NULL;
}

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

CUresult cu_mipmap_fields(CUarray level0, const CUDA_TEXTURE_DESC *t,
                          struct gdev_abi_tex_desc *d)
{
    const struct CUmipmappedArray_st *m = level0->owner;
    if (t->mipmapFilterMode > CU_TR_FILTER_MODE_LINEAR)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuTexObjectCreate: mipmap filter mode %d",
                       (int)t->mipmapFilterMode);
    if (m->levels < 2)
        return CUDA_SUCCESS; /* one level: nothing to choose among */
    d->levels = m->levels;
    if (t->mipmapFilterMode == CU_TR_FILTER_MODE_LINEAR)
        d->flags |= GDEV_ABI_TEX_MIPMAP_LINEAR;
    d->lod_bias = float_bits(t->mipmapLevelBias);
    d->min_lod = float_bits(t->minMipmapLevelClamp);
    d->max_lod = float_bits(t->maxMipmapLevelClamp);
    d->max_aniso = t->maxAnisotropy > 16 ? 16 : t->maxAnisotropy;
    return CUDA_SUCCESS;
}

void cu_mipmap_forget(CUcontext c)
{
    pthread_mutex_lock(&mip_lock);
    for (struct CUmipmappedArray_st **p = &mipmaps; *p;) {
        struct CUmipmappedArray_st *m = *p;
        if (m->ctx == c) {
            *p = m->next;
            free(m->level);
            free(m);
        } else {
            p = &m->next;
        }
    }
    pthread_mutex_unlock(&mip_lock);
}
