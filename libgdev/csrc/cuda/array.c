/* CUDA arrays: cuArrayCreate/Destroy/GetDescriptor and their 3D forms.  An array is stored
 * pitch-linear in one device allocation of its context: max(Height, 1) rows of Width texels,
 * packed (pitch = one row of texels; the layout is the library's business, as CUDA's is).  A
 * texture over an array is a pitch-2D texture over that memory (texture.c); copies with
 * arrays are copy2d.c's.  Only 1D and 2D arrays exist: cuArray3DCreate with a Depth, or
 * layered, cubemap, gather, sparse or deferred-mapping flags, is CUDA_ERROR_NOT_SUPPORTED. */
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

API CUresult cuArrayCreate(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *d)
{
    CUcontext c = NULL;
    CUresult r = cu_current(&c);
    size_t esize = d ? cu_element_size(d->Format) : 0;
    struct CUarray_st *a;
    if (r)
        return r;
    if (!pHandle || !esize || !d->Width || (d->NumChannels != 1 && d->NumChannels != 2 &&
                                           d->NumChannels != 4))
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuArrayCreate: bad descriptor");
    a = calloc(1, sizeof *a);
    if (!a)
        return CUDA_ERROR_OUT_OF_MEMORY;
    a->ctx = c;
    a->desc = *d;
    a->pitch = d->Width * esize * d->NumChannels;
    a->rows = d->Height ? d->Height : 1;
    if (a->pitch / d->Width != esize * d->NumChannels || a->rows > SIZE_MAX / a->pitch) {
        free(a);
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuArrayCreate: too large");
    }
    if ((r = cuMemAlloc(&a->ptr, a->pitch * a->rows)) || remember(a)) {
        if (!r)
            cuMemFree(a->ptr);
        free(a);
        return r ? r : CUDA_ERROR_OUT_OF_MEMORY;
    }
    *pHandle = a;
    return CUDA_SUCCESS;
}

/* The live array of the current context, or NULL. */
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
    if (!a)
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
    if (!pHandle || !d)
        return CUDA_ERROR_INVALID_VALUE;
    if (d->Depth || (d->Flags & ~(unsigned)CUDA_ARRAY3D_SURFACE_LDST))
        return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "cuArray3DCreate: only 1D and 2D arrays "
                       "(Depth 0, no flag but CUDA_ARRAY3D_SURFACE_LDST)");
    CUDA_ARRAY_DESCRIPTOR two = {.Width = d->Width, .Height = d->Height, .Format = d->Format,
                                 .NumChannels = d->NumChannels};
    CUresult r = cuArrayCreate(pHandle, &two);
    if (!r)
        (*pHandle)->flags = d->Flags;
    return r;
}

API CUresult cuArray3DGetDescriptor(CUDA_ARRAY3D_DESCRIPTOR *out, CUarray hArray)
{
    struct CUarray_st *a = cu_array(hArray);
    if (!a || !out)
        return a ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE;
    *out = (CUDA_ARRAY3D_DESCRIPTOR){.Width = a->desc.Width, .Height = a->desc.Height,
                                     .Format = a->desc.Format,
                                     .NumChannels = a->desc.NumChannels, .Flags = a->flags};
    return CUDA_SUCCESS;
}
