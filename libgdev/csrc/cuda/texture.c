/* Texture objects: cuTexObjectCreate/Destroy/GetResourceDesc/GetTextureDesc.
 * A CUtexObject is the daemon's opaque handle from its per-context texture table (gtex_create);
 * kernels receive it as a .u64 parameter.  The library keeps, per object, its context and a
 * copy of the two descriptors (for the Get calls); a context's objects are forgotten when it is
 * destroyed (the daemon drops its table with the context).  Linear, pitch-2D and array
 * resources (an array is the pitch-2D memory it is stored in, array.c, with its slices and
 * shape: 3D, layered, cubemap); mipmapped arrays and resource views are
 * CUDA_ERROR_NOT_SUPPORTED. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

struct texobj {
    CUtexObject obj;
    CUcontext ctx;
    CUDA_RESOURCE_DESC res;
    CUDA_TEXTURE_DESC tex;
    struct texobj *next;
};

static pthread_mutex_t tex_lock = PTHREAD_MUTEX_INITIALIZER;
static struct texobj *objects; /* guarded by tex_lock */

static uint32_t border_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* The daemon's descriptor of CUDA's two (driver semantics: 8/16-bit integers are read as
 * normalised floats unless CU_TRSF_READ_AS_INTEGER); the daemon checks every field. */
/* The pitch-2D resource an array is stored in (array.c). */
static CUresult array_resource(CUcontext c, CUarray a, CUDA_RESOURCE_DESC *out)
{
    if (!a || a->ctx != c || a->destroyed)
        return CUDA_ERROR_INVALID_HANDLE;
    memset(out, 0, sizeof *out);
    out->resType = CU_RESOURCE_TYPE_PITCH2D;
    out->res.pitch2D.devPtr = a->ptr;
    out->res.pitch2D.format = a->desc.Format;
    out->res.pitch2D.numChannels = a->desc.NumChannels;
    out->res.pitch2D.width = a->desc.Width;
    out->res.pitch2D.height = a->rows;
    out->res.pitch2D.pitchInBytes = a->pitch;
    return CUDA_SUCCESS;
}

/* The slices of array a (checked by array_resource) on descriptor d: its shape, depth and
 * slice pitch; nothing for a 1D or 2D array. */
static void array_slices(CUarray a, struct gdev_abi_tex_desc *d)
{
    d->shape = cu_array_shape(a);
    if (d->shape != GDEV_ABI_TEX_SHAPE_PLAIN) {
        d->depth = a->slices;
        d->slice_pitch = a->slice_pitch;
    }
}

static CUresult to_wire(const CUDA_RESOURCE_DESC *r, const CUDA_TEXTURE_DESC *t,
                        struct gdev_abi_tex_desc *d)
{
    CUarray_format fmt = r->resType == CU_RESOURCE_TYPE_LINEAR ? r->res.linear.format
                                                                : r->res.pitch2D.format;
    unsigned ch = r->resType == CU_RESOURCE_TYPE_LINEAR ? r->res.linear.numChannels
                                                        : r->res.pitch2D.numChannels;
    unsigned esize = (unsigned)cu_element_size(fmt);
    memset(d, 0, sizeof *d);
    if (r->resType != CU_RESOURCE_TYPE_LINEAR && r->resType != CU_RESOURCE_TYPE_PITCH2D)
        return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "cuTexObjectCreate: mipmapped arrays");
    if (r->flags || !esize || (ch != 1 && ch != 2 && ch != 4) || t->filterMode > 1)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuTexObjectCreate: bad descriptor");
    d->kind = r->resType;
    d->format = fmt;
    d->channels = ch;
    if (r->resType == CU_RESOURCE_TYPE_LINEAR) {
        d->addr = r->res.linear.devPtr;
        d->width = r->res.linear.sizeInBytes / (esize * ch);
        d->height = 1;
    } else {
        d->addr = r->res.pitch2D.devPtr;
        d->width = r->res.pitch2D.width;
        d->height = r->res.pitch2D.height;
        d->pitch = r->res.pitch2D.pitchInBytes;
    }
    if (t->flags & CU_TRSF_NORMALIZED_COORDINATES)
        d->flags |= GDEV_ABI_TEX_NORMALIZED_COORDS;
    if (esize < 4 && fmt != CU_AD_FORMAT_HALF && !(t->flags & CU_TRSF_READ_AS_INTEGER))
        d->flags |= GDEV_ABI_TEX_READ_NORMALIZED;
    if (t->filterMode == CU_TR_FILTER_MODE_LINEAR)
        d->flags |= GDEV_ABI_TEX_FILTER_LINEAR;
    for (int k = 0; k < 3; k++)
        d->modes |= ((uint32_t)t->addressMode[k] & 0xff) << (8 * k);
    d->border0 = border_bits(t->borderColor[0]);
    d->border1 = border_bits(t->borderColor[1]);
    d->border2 = border_bits(t->borderColor[2]);
    d->border3 = border_bits(t->borderColor[3]);
    return CUDA_SUCCESS;
}

/* Enter the daemon's object for desc and remember it (with copies of res and tex, tex may be
 * NULL) under *obj. */
static CUresult create(CUcontext c, const struct gdev_abi_tex_desc *d,
                       const CUDA_RESOURCE_DESC *res, const CUDA_TEXTURE_DESC *tex,
                       unsigned long long *obj, const char *what)
{
    struct texobj *o = calloc(1, sizeof *o);
    uint64_t handle = 0;
    int err;
    if (!o)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if ((err = gtex_create(c->h, d, &handle))) {
        free(o);
        /* EFAULT here is a range past its allocation: a bad argument, not a kernel fault */
        return cu_fail(err == -EFAULT ? CUDA_ERROR_INVALID_VALUE : cu_error(err), "%s: %s",
                       what, gdev_last_error());
    }
    o->obj = handle;
    o->ctx = c;
    o->res = *res;
    if (tex)
        o->tex = *tex;
    pthread_mutex_lock(&tex_lock);
    o->next = objects;
    objects = o;
    pthread_mutex_unlock(&tex_lock);
    *obj = handle;
    return CUDA_SUCCESS;
}

API CUresult cuTexObjectCreate(CUtexObject *pTexObject, const CUDA_RESOURCE_DESC *pResDesc,
                               const CUDA_TEXTURE_DESC *pTexDesc,
                               const CUDA_RESOURCE_VIEW_DESC *pResViewDesc)
{
    struct gdev_abi_tex_desc d;
    CUDA_RESOURCE_DESC as2d;
    CUcontext c = NULL;
    CUresult r = cu_live(&c);
    if (r)
        return r;
    if (!pTexObject || !pResDesc || !pTexDesc)
        return CUDA_ERROR_INVALID_VALUE;
    if (pResViewDesc)
        return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "cuTexObjectCreate: resource views");
    if (pResDesc->resType == CU_RESOURCE_TYPE_ARRAY &&
        (r = array_resource(c, pResDesc->res.array.hArray, &as2d)))
        return r;
    if ((r = to_wire(pResDesc->resType == CU_RESOURCE_TYPE_ARRAY ? &as2d : pResDesc, pTexDesc,
                     &d)))
        return r;
    if (pResDesc->resType == CU_RESOURCE_TYPE_ARRAY)
        array_slices(pResDesc->res.array.hArray, &d);
    return create(c, &d, pResDesc, pTexDesc, pTexObject, "cuTexObjectCreate");
}

API CUresult cuSurfObjectCreate(CUsurfObject *pSurfObject, const CUDA_RESOURCE_DESC *pResDesc)
{
    struct gdev_abi_tex_desc d;
    CUDA_RESOURCE_DESC as2d;
    CUDA_TEXTURE_DESC none;
    CUcontext c = NULL;
    CUresult r = cu_live(&c);
    if (r)
        return r;
    if (!pSurfObject || !pResDesc || pResDesc->resType != CU_RESOURCE_TYPE_ARRAY)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuSurfObjectCreate: needs an array");
    memset(&none, 0, sizeof none);
    if ((r = array_resource(c, pResDesc->res.array.hArray, &as2d)) ||
        (r = to_wire(&as2d, &none, &d)))
        return r;
    array_slices(pResDesc->res.array.hArray, &d);
    d.flags = GDEV_ABI_TEX_SURFACE; /* no sampling: raw suld/sust */
    return create(c, &d, pResDesc, NULL, pSurfObject, "cuSurfObjectCreate");
}

API CUresult cuSurfObjectDestroy(CUsurfObject surfObject)
{
    return cuTexObjectDestroy(surfObject);
}

API CUresult cuSurfObjectGetResourceDesc(CUDA_RESOURCE_DESC *pResDesc, CUsurfObject surfObject)
{
    return cuTexObjectGetResourceDesc(pResDesc, surfObject);
}

/* The record of obj (tex_lock held), or NULL. */
static struct texobj **find(CUtexObject obj)
{
    for (struct texobj **p = &objects; *p; p = &(*p)->next)
        if ((*p)->obj == obj && !(*p)->ctx->destroyed)
            return p;
    return NULL;
}

API CUresult cuTexObjectDestroy(CUtexObject texObject)
{
    struct texobj *o = NULL;
    struct texobj **p;
    int err;
    pthread_mutex_lock(&tex_lock);
    p = find(texObject);
    if (p) {
        o = *p;
        *p = o->next;
    }
    pthread_mutex_unlock(&tex_lock);
    if (!o)
        return CUDA_ERROR_INVALID_VALUE;
    err = gtex_destroy(o->ctx->h, texObject);
    free(o);
    return err ? cu_fail(cu_error(err), "cuTexObjectDestroy: %s", gdev_last_error())
               : CUDA_SUCCESS;
}

static CUresult get_descs(CUtexObject obj, CUDA_RESOURCE_DESC *res, CUDA_TEXTURE_DESC *tex)
{
    struct texobj **p;
    pthread_mutex_lock(&tex_lock);
    p = find(obj);
    if (p && res)
        *res = (*p)->res;
    if (p && tex)
        *tex = (*p)->tex;
    pthread_mutex_unlock(&tex_lock);
    return p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

API CUresult cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC *pResDesc, CUtexObject texObject)
{
    return pResDesc ? get_descs(texObject, pResDesc, NULL) : CUDA_ERROR_INVALID_VALUE;
}

API CUresult cuTexObjectGetTextureDesc(CUDA_TEXTURE_DESC *pTexDesc, CUtexObject texObject)
{
    return pTexDesc ? get_descs(texObject, NULL, pTexDesc) : CUDA_ERROR_INVALID_VALUE;
}

void cu_tex_forget(CUcontext ctx)
{
    pthread_mutex_lock(&tex_lock);
    for (struct texobj **p = &objects; *p;) {
        struct texobj *o = *p;
        if (o->ctx == ctx) {
            *p = o->next;
            free(o);
        } else {
            p = &o->next;
        }
    }
    pthread_mutex_unlock(&tex_lock);
}
