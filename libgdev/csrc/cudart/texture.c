/* Texture objects in the runtime API, over the driver's cuTexObject* calls: channel
 * descriptors become CUarray_format and a channel count, the read mode becomes
 * CU_TRSF_READ_AS_INTEGER (element reads of 8/16-bit integers), normalizedCoords becomes
 * CU_TRSF_NORMALIZED_COORDINATES, the mipmap fields pass as they are (mipmapped arrays:
 * mipmap.c).  sRGB and the cubemap fields have no effect; anisotropy is checked by the
 * daemon and sampling stays isotropic.  Resource views: cudaErrorNotSupported. */
#include <string.h>

#include "cudart_internal.h"

API struct cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w,
                                                       enum cudaChannelFormatKind f)
{
    struct cudaChannelFormatDesc d = {x, y, z, w, f};
    return d;
}

/* The driver's format and channel count of a channel descriptor; 0 if textures cannot have it
 * (channels of different widths, three channels, or a kind other than signed, unsigned and
 * float). */
int rt_channel_format(const struct cudaChannelFormatDesc *d, CUarray_format *fmt,
                      unsigned *ch)
{
    int bits[4] = {d->x, d->y, d->z, d->w};
    unsigned n = 0;
    while (n < 4 && bits[n])
        n++;
    for (unsigned k = 0; k < 4; k++)
        if ((k < n && bits[k] != d->x) || (k >= n && bits[k]))
            return 0;
    *ch = n;
    if (d->f == cudaChannelFormatKindFloat)
        *fmt = d->x == 16 ? CU_AD_FORMAT_HALF : CU_AD_FORMAT_FLOAT;
    else if (d->f == cudaChannelFormatKindSigned)
        *fmt = d->x == 8 ? CU_AD_FORMAT_SIGNED_INT8
               : d->x == 16 ? CU_AD_FORMAT_SIGNED_INT16 : CU_AD_FORMAT_SIGNED_INT32;
    else if (d->f == cudaChannelFormatKindUnsigned)
        *fmt = d->x == 8 ? CU_AD_FORMAT_UNSIGNED_INT8
               : d->x == 16 ? CU_AD_FORMAT_UNSIGNED_INT16 : CU_AD_FORMAT_UNSIGNED_INT32;
    else
        return 0;
    if (d->f == cudaChannelFormatKindFloat ? (d->x != 16 && d->x != 32)
                                           : (d->x != 8 && d->x != 16 && d->x != 32))
        return 0;
    return n == 1 || n == 2 || n == 4;
}

static cudaError_t to_driver(const struct cudaResourceDesc *r, const struct cudaTextureDesc *t,
                             CUDA_RESOURCE_DESC *dr, CUDA_TEXTURE_DESC *dt)
{
    const struct cudaChannelFormatDesc *cd;
    CUarray_format fmt;
    unsigned ch;
    struct cudaChannelFormatDesc from_array;
    memset(dr, 0, sizeof *dr);
    memset(dt, 0, sizeof *dt);
    if (r->resType == cudaResourceTypeArray || r->resType == cudaResourceTypeMipmappedArray) {
        CUDA_ARRAY_DESCRIPTOR ad;
        CUarray level0 = NULL;
        CUresult cr = r->resType == cudaResourceTypeArray
                      ? cuArrayGetDescriptor(&ad, (CUarray)r->res.array.array)
                      : cuMipmappedArrayGetLevel(&level0, (CUmipmappedArray)
                                                 r->res.mipmap.mipmap, 0);
        if (!cr && level0)
            cr = cuArrayGetDescriptor(&ad, level0);
        if (cr)
            return rt_from(cr);
        from_array = rt_channel_desc(ad.Format, ad.NumChannels);
        cd = &from_array;
    } else if (r->resType == cudaResourceTypeLinear || r->resType == cudaResourceTypePitch2D) {
        cd = r->resType == cudaResourceTypeLinear ? &r->res.linear.desc : &r->res.pitch2D.desc;
    } else {
        return cudaErrorNotSupported;
    }
    if (!rt_channel_format(cd, &fmt, &ch) || t->filterMode > cudaFilterModeLinear ||
        t->readMode > cudaReadModeNormalizedFloat)
        return cudaErrorInvalidChannelDescriptor;
    if (t->readMode == cudaReadModeNormalizedFloat && cd->f != cudaChannelFormatKindFloat &&
        cd->x == 32)
        return cudaErrorInvalidValue; /* 32-bit integers cannot be read as floats */
    dr->resType = (CUresourcetype)r->resType;
    dr->flags = r->flags;
    if (r->resType == cudaResourceTypeArray) {
        dr->res.array.hArray = (CUarray)r->res.array.array;
    } else if (r->resType == cudaResourceTypeMipmappedArray) {
        dr->res.mipmap.hMipmappedArray = (CUmipmappedArray)r->res.mipmap.mipmap;
    } else if (r->resType == cudaResourceTypeLinear) {
        dr->res.linear.devPtr = (CUdeviceptr)r->res.linear.devPtr;
        dr->res.linear.format = fmt;
        dr->res.linear.numChannels = ch;
        dr->res.linear.sizeInBytes = r->res.linear.sizeInBytes;
    } else {
        dr->res.pitch2D.devPtr = (CUdeviceptr)r->res.pitch2D.devPtr;
        dr->res.pitch2D.format = fmt;
        dr->res.pitch2D.numChannels = ch;
        dr->res.pitch2D.width = r->res.pitch2D.width;
        dr->res.pitch2D.height = r->res.pitch2D.height;
        dr->res.pitch2D.pitchInBytes = r->res.pitch2D.pitchInBytes;
    }
    for (int k = 0; k < 3; k++)
        dt->addressMode[k] = (CUaddress_mode)t->addressMode[k];
    dt->filterMode = (CUfilter_mode)t->filterMode;
    if (t->readMode == cudaReadModeElementType)
        dt->flags |= CU_TRSF_READ_AS_INTEGER;
    if (t->normalizedCoords)
        dt->flags |= CU_TRSF_NORMALIZED_COORDINATES;
    dt->maxAnisotropy = t->maxAnisotropy;
    dt->mipmapFilterMode = (CUfilter_mode)t->mipmapFilterMode;
    dt->mipmapLevelBias = t->mipmapLevelBias;
    dt->minMipmapLevelClamp = t->minMipmapLevelClamp;
    dt->maxMipmapLevelClamp = t->maxMipmapLevelClamp;
    memcpy(dt->borderColor, t->borderColor, sizeof dt->borderColor);
    return cudaSuccess;
}

API cudaError_t cudaCreateTextureObject(cudaTextureObject_t *pTexObject,
                                        const struct cudaResourceDesc *pResDesc,
                                        const struct cudaTextureDesc *pTexDesc,
                                        const struct cudaResourceViewDesc *pResViewDesc)
{
    CUDA_RESOURCE_DESC dr;
    CUDA_TEXTURE_DESC dt;
    CUcontext ctx;
    cudaError_t e = rt_ctx(&ctx);
    if (e)
        return e;
    if (!pTexObject || !pResDesc || !pTexDesc)
        return rt_set(cudaErrorInvalidValue);
    if (pResViewDesc)
        return rt_set(cudaErrorNotSupported);
    if ((e = to_driver(pResDesc, pTexDesc, &dr, &dt)))
        return rt_set(e);
    return rt_set(rt_from(cuTexObjectCreate(pTexObject, &dr, &dt, NULL)));
}

API cudaError_t cudaCreateSurfaceObject(cudaSurfaceObject_t *pSurfObject,
                                        const struct cudaResourceDesc *pResDesc)
{
    CUDA_RESOURCE_DESC dr;
    CUcontext ctx;
    cudaError_t e = rt_ctx(&ctx);
    if (e)
        return e;
    if (!pSurfObject || !pResDesc || pResDesc->resType != cudaResourceTypeArray)
        return rt_set(cudaErrorInvalidValue);
    memset(&dr, 0, sizeof dr);
    dr.resType = CU_RESOURCE_TYPE_ARRAY;
    dr.res.array.hArray = (CUarray)pResDesc->res.array.array;
    return rt_set(rt_from(cuSurfObjectCreate(pSurfObject, &dr)));
}

API cudaError_t cudaDestroySurfaceObject(cudaSurfaceObject_t surfObject)
{
    return rt_set(rt_from(cuSurfObjectDestroy(surfObject)));
}

API cudaError_t cudaGetSurfaceObjectResourceDesc(struct cudaResourceDesc *pResDesc,
                                                 cudaSurfaceObject_t surfObject)
{
    return cudaGetTextureObjectResourceDesc(pResDesc, surfObject);
}

API cudaError_t cudaDestroyTextureObject(cudaTextureObject_t texObject)
{
    return rt_set(rt_from(cuTexObjectDestroy(texObject)));
}

/* The runtime's channel descriptor of a driver format and channel count. */
struct cudaChannelFormatDesc rt_channel_desc(CUarray_format fmt, unsigned ch)
{
    int bits = fmt == CU_AD_FORMAT_UNSIGNED_INT8 || fmt == CU_AD_FORMAT_SIGNED_INT8 ? 8
               : fmt == CU_AD_FORMAT_UNSIGNED_INT16 || fmt == CU_AD_FORMAT_SIGNED_INT16 ||
                       fmt == CU_AD_FORMAT_HALF ? 16 : 32;
    enum cudaChannelFormatKind f =
        fmt == CU_AD_FORMAT_HALF || fmt == CU_AD_FORMAT_FLOAT ? cudaChannelFormatKindFloat
        : fmt == CU_AD_FORMAT_SIGNED_INT8 || fmt == CU_AD_FORMAT_SIGNED_INT16 ||
                fmt == CU_AD_FORMAT_SIGNED_INT32 ? cudaChannelFormatKindSigned
                                                 : cudaChannelFormatKindUnsigned;
    return cudaCreateChannelDesc(bits, ch > 1 ? bits : 0, ch > 2 ? bits : 0, ch > 3 ? bits : 0,
                                 f);
}

API cudaError_t cudaGetTextureObjectResourceDesc(struct cudaResourceDesc *pResDesc,
                                                 cudaTextureObject_t texObject)
{
    CUDA_RESOURCE_DESC dr;
    CUresult r;
    if (!pResDesc)
        return rt_set(cudaErrorInvalidValue);
    if ((r = cuTexObjectGetResourceDesc(&dr, texObject)))
        return rt_set(rt_from(r));
    memset(pResDesc, 0, sizeof *pResDesc);
    pResDesc->resType = (enum cudaResourceType)dr.resType;
    pResDesc->flags = dr.flags;
    if (dr.resType == CU_RESOURCE_TYPE_ARRAY) {
        pResDesc->res.array.array = (cudaArray_t)dr.res.array.hArray;
    } else if (dr.resType == CU_RESOURCE_TYPE_MIPMAPPED_ARRAY) {
        pResDesc->res.mipmap.mipmap = (cudaMipmappedArray_t)dr.res.mipmap.hMipmappedArray;
    } else if (dr.resType == CU_RESOURCE_TYPE_LINEAR) {
        pResDesc->res.linear.devPtr = (void *)dr.res.linear.devPtr;
        pResDesc->res.linear.desc = rt_channel_desc(dr.res.linear.format,
                                                 dr.res.linear.numChannels);
        pResDesc->res.linear.sizeInBytes = dr.res.linear.sizeInBytes;
    } else {
        pResDesc->res.pitch2D.devPtr = (void *)dr.res.pitch2D.devPtr;
        pResDesc->res.pitch2D.desc = rt_channel_desc(dr.res.pitch2D.format,
                                                  dr.res.pitch2D.numChannels);
        pResDesc->res.pitch2D.width = dr.res.pitch2D.width;
        pResDesc->res.pitch2D.height = dr.res.pitch2D.height;
        pResDesc->res.pitch2D.pitchInBytes = dr.res.pitch2D.pitchInBytes;
    }
    return cudaSuccess;
}

API cudaError_t cudaGetTextureObjectTextureDesc(struct cudaTextureDesc *pTexDesc,
                                                cudaTextureObject_t texObject)
{
    CUDA_TEXTURE_DESC dt;
    CUresult r;
    if (!pTexDesc)
        return rt_set(cudaErrorInvalidValue);
    if ((r = cuTexObjectGetTextureDesc(&dt, texObject)))
        return rt_set(rt_from(r));
    memset(pTexDesc, 0, sizeof *pTexDesc);
    for (int k = 0; k < 3; k++)
        pTexDesc->addressMode[k] = (enum cudaTextureAddressMode)dt.addressMode[k];
    pTexDesc->filterMode = (enum cudaTextureFilterMode)dt.filterMode;
    pTexDesc->readMode = dt.flags & CU_TRSF_READ_AS_INTEGER ? cudaReadModeElementType
                                                            : cudaReadModeNormalizedFloat;
    pTexDesc->normalizedCoords = !!(dt.flags & CU_TRSF_NORMALIZED_COORDINATES);
    pTexDesc->maxAnisotropy = dt.maxAnisotropy;
    pTexDesc->mipmapFilterMode = (enum cudaTextureFilterMode)dt.mipmapFilterMode;
    pTexDesc->mipmapLevelBias = dt.mipmapLevelBias;
    pTexDesc->minMipmapLevelClamp = dt.minMipmapLevelClamp;
    pTexDesc->maxMipmapLevelClamp = dt.maxMipmapLevelClamp;
    memcpy(pTexDesc->borderColor, dt.borderColor, sizeof dt.borderColor);
    return cudaSuccess;
}
