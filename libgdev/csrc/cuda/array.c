/* CUDA arrays: cuArrayCreate/Destroy/GetDescriptor and their 3D forms.  An array is stored
 * pitch-linear in one device allocation of its context: max(Depth, 1) slices of max(Height,
 * 1) rows of Width texels, packed (pitch = one row of texels, slice pitch = pitch x rows; the
 * layout is the library's business, as CUDA's is).  A 3D array (Depth > 0), a layered one
 * (CUDA_ARRAY3D_LAYERED: Depth layers; Height 0 for 1D layers), a cubemap
 * (CUDA_ARRAY3D_CUBEMAP: 6 square faces) and a layered cubemap (both flags, Depth a multiple
 * of 6) are those slices; CUDA_ARRAY3D_SURFACE_LDST is accepted (every array can back a
 * surface here), and so is CUDA_ARRAY3D_TEXTURE_GATHER (every 2D array can be gathered).  A
 * texture over an array is a pitch-2D texture over that memory with the array's shape
 * (texture.c); copies with arrays are copy2d.c's; mipmap levels are arrays too (mipmap.c).
 * Depth, sparse and deferred-mapping arrays are CUDA_ERROR_NOT_SUPPORTED. */
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

/* Every array made, freed with its context (a destroyed array stays until then, so a
 * second cuArrayDestroy is an error rather than a use after free). */
static struct CUarray_st **made;
static size_t nmade, capmade;
static pthread_mutex_t made_lock = PTHREAD_MUTEX_INITIALIZER;

static int remember(struct CUarray_st *a)
{
    pthread_mutex_lock(&made_lock);
    if (nmade == capmade) {
        size_t cap = capmade ? 2 * capmade : 16;
        struct CUarray_st **m = realloc(made, cap * sizeof *m);
        if (!m) {
            pthread_mutex_unlock(&made_lock);
            return -1;
        }
        made = m;
        capmade = cap;
    }
    made[nmade++] = a;
    pthread_mutex_unlock(&made_lock);
    return 0;
}

void cu_array_forget(CUcontext c)
{
    pthread_mutex_lock(&made_lock);
    for (size_t i = 0; i < nmade;)
        if (made[i]->ctx == c) {
            free(made[i]);
            made[i] = made[--nmade];
        } else {
            i++;
        }
    pthread_mutex_unlock(&made_lock);
}

size_t cu_element_size(CUarray_format f)
{
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return 4;
    default:
        return 0;
    }
}

/* CUDA's limits of an array of descriptor d (maxTexture3D, maxTexture*Layered, ...). */
int cu_array_within_limits(const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    unsigned shape = d->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP);
    if (shape == (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP))
        return d->Width == d->Height && d->Depth && d->Depth % 6 == 0 &&
               d->Depth <= 6 * 2046 && d->Width <= 32768;
    if (shape == CUDA_ARRAY3D_CUBEMAP)
        return d->Width == d->Height && d->Depth == 6 && d->Width <= 32768;
    if (shape == CUDA_ARRAY3D_LAYERED)
        return d->Depth && d->Depth <= 2048 && d->Width <= 32768 && d->Height <= 32768;
    return !d->Depth || (d->Height && d->Width <= 16384 && d->Height <= 16384 &&
                         d->Depth <= 16384);
}

/* A new array of d in the current context (cuArrayCreate's and cuArray3DCreate's). */
static CUresult make_array(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d, const char *who)
{
    CUcontext c = NULL;
    CUresult r = cu_live(&c);
    size_t esize = d ? cu_element_size(d->Format) : 0;
    struct CUarray_st *a;
    if (r)
        return r;
    if (!pHandle || !esize || !d->Width || (d->NumChannels != 1 && d->NumChannels != 2 &&
                                           d->NumChannels != 4) || !cu_array_within_limits(d))
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "%s: bad descriptor", who);
    a = calloc(1, sizeof *a);
    if (!a)
        return CUDA_ERROR_OUT_OF_MEMORY;
    a->ctx = c;
    a->desc = (CUDA_ARRAY_DESCRIPTOR){.Width = d->Width, .Height = d->Height,
                                      .Format = d->Format, .NumChannels = d->NumChannels};
    a->depth = d->Depth;
    a->flags = d->Flags;
    a->pitch = d->Width * esize * d->NumChannels;
    a->rows = d->Height ? d->Height : 1;
    a->slices = d->Depth ? d->Depth : 1;
    if (a->pitch / d->Width != esize * d->NumChannels || a->rows > SIZE_MAX / a->pitch ||
        a->slices > SIZE_MAX / (a->pitch * a->rows)) {
        free(a);
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "%s: too large", who);
    }
    a->slice_pitch = a->pitch * a->rows;
    if ((r = cuMemAlloc(&a->ptr, a->slice_pitch * a->slices)) || remember(a)) {
        if (!r)
            cuMemFree(a->ptr);
        free(a);
        return r ? r : CUDA_ERROR_OUT_OF_MEMORY;
    }
    *pHandle = a;
    return CUDA_SUCCESS;
}

API CUresult cuArrayCreate(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *d)
{
    if (!d)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_ARRAY3D_DESCRIPTOR three = {.Width = d->Width, .Height = d->Height,
                                     .Format = d->Format, .NumChannels = d->NumChannels};
    return make_array(pHandle, &three, "cuArrayCreate");
}

unsigned cu_array_shape(const struct CUarray_st *a)
{
    unsigned f = a->flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP);
    if (f == (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP))
        return GDEV_ABI_TEX_SHAPE_CUBEMAP_LAYERED;
    if (f == CUDA_ARRAY3D_CUBEMAP)
        return GDEV_ABI_TEX_SHAPE_CUBEMAP;
    if (f == CUDA_ARRAY3D_LAYERED)
        return a->desc.Height ? GDEV_ABI_TEX_SHAPE_LAYERED_2D : GDEV_ABI_TEX_SHAPE_LAYERED_1D;
    return a->depth ? GDEV_ABI_TEX_SHAPE_3D : GDEV_ABI_TEX_SHAPE_PLAIN;
}

/* The live array of the current context, or NULL. */
CUcontext cu_array_context(CUarray a)
{
    CUcontext c = NULL;
    pthread_mutex_lock(&made_lock);
    for (size_t i = 0; i < nmade && !c; i++)
        if (made[i] == a && !a->destroyed)
            c = a->ctx;
    pthread_mutex_unlock(&made_lock);
    return c;
}

struct CUarray_st *cu_array(CUarray a)
{
    CUcontext c = NULL;
    if (cu_current(&c) || !a || a->ctx != c || a->destroyed)
        return NULL;
    return a;
}

API CUresult cuArrayDestroy(CUarray hArray)
{
    struct CUarray_st *a = cu_array(hArray);
    CUresult r;
    if (!a || a->owner) /* a mipmap level goes with its mipmapped array */
        return CUDA_ERROR_INVALID_HANDLE;
    if ((r = cuMemFree(a->ptr)))
        return r;
    a->destroyed = 1; /* kept until its context goes (cu_array_forget) */
    return CUDA_SUCCESS;
}

API CUresult cuArrayGetDescriptor(CUDA_ARRAY_DESCRIPTOR *pArrayDescriptor, CUarray hArray)
{
    struct CUarray_st *a = cu_array(hArray);
    if (!a || !pArrayDescriptor)
        return a ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE;
    *pArrayDescriptor = a->desc;
    return CUDA_SUCCESS;
}

API CUresult cuArray3DCreate(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    const unsigned ours = CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST |
                          CUDA_ARRAY3D_CUBEMAP | CUDA_ARRAY3D_TEXTURE_GATHER;
    if (!pHandle || !d)
        return CUDA_ERROR_INVALID_VALUE;
    if (d->Flags & ~ours)
        return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "cuArray3DCreate: flags 0x%x (only "
                       "CUDA_ARRAY3D_LAYERED, _CUBEMAP, _SURFACE_LDST and _TEXTURE_GATHER)",
                       d->Flags & ~ours);
    return make_array(pHandle, d, "cuArray3DCreate");
}

API CUresult cuArray3DGetDescriptor(CUDA_ARRAY3D_DESCRIPTOR *out, CUarray hArray)
{
    struct CUarray_st *a = cu_array(hArray);
    if (!a || !out)
        return a ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE;
    *out = (CUDA_ARRAY3D_DESCRIPTOR){.Width = a->desc.Width, .Height = a->desc.Height,
                                     .Depth = a->depth, .Format = a->desc.Format,
                                     .NumChannels = a->desc.NumChannels, .Flags = a->flags};
    return CUDA_SUCCESS;
}
