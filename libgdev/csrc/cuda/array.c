/* CUDA arrays: cuArrayCreate/Destroy/GetDescriptor, cuMemcpy2D, cuMemcpyHtoA/AtoH.
 * An array is stored pitch-linear in one device allocation of its context: max(Height, 1)
 * rows of Width texels, packed (pitch = one row of texels; the layout is the library's
 * business, as CUDA's is).  A texture over an array is a pitch-2D texture over that memory
 * (texture.c).  cuMemcpy2D copies row by row (one copy when both sides are contiguous). */
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

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
    if ((r = cuMemAlloc(&a->ptr, a->pitch * a->rows))) {
        free(a);
        return r;
    }
    *pHandle = a;
    return CUDA_SUCCESS;
}

/* The live array of the current context, or NULL. */
static struct CUarray_st *live(CUarray a)
{
    CUcontext c = NULL;
    if (cu_current(&c) || !a || a->ctx != c || a->destroyed)
        return NULL;
    return a;
}

API CUresult cuArrayDestroy(CUarray hArray)
{
    struct CUarray_st *a = live(hArray);
    CUresult r;
    if (!a)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((r = cuMemFree(a->ptr)))
        return r;
    a->destroyed = 1; /* kept, so a second destroy is an error rather than a use after free */
    return CUDA_SUCCESS;
}

API CUresult cuArrayGetDescriptor(CUDA_ARRAY_DESCRIPTOR *pArrayDescriptor, CUarray hArray)
{
    struct CUarray_st *a = live(hArray);
    if (!a || !pArrayDescriptor)
        return a ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE;
    *pArrayDescriptor = a->desc;
    return CUDA_SUCCESS;
}

/* One side of a 2D copy: host pointer or device address of its first byte, and pitch. */
struct side {
    int host;
    const uint8_t *hp;
    CUdeviceptr dp;
    size_t pitch;
};

static CUresult side_of(CUmemorytype type, const void *host, CUdeviceptr dev, CUarray arr,
                        size_t x, size_t y, size_t pitch, size_t w, size_t h, struct side *s)
{
    memset(s, 0, sizeof *s);
    if (type == CU_MEMORYTYPE_ARRAY) {
        struct CUarray_st *a = live(arr);
        if (!a)
            return CUDA_ERROR_INVALID_HANDLE;
        if (x + w > a->pitch || y + h > a->rows)
            return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuMemcpy2D: outside the array");
        s->dp = a->ptr + y * a->pitch + x;
        s->pitch = a->pitch;
        return CUDA_SUCCESS;
    }
    if (pitch < w && h > 1)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuMemcpy2D: pitch below the width");
    s->pitch = pitch;
    if (type == CU_MEMORYTYPE_HOST) {
        s->host = 1;
        s->hp = (const uint8_t *)host + y * pitch + x;
        return host ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    }
    if (type != CU_MEMORYTYPE_DEVICE)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuMemcpy2D: memory type %d", (int)type);
    s->dp = dev + y * pitch + x;
    return CUDA_SUCCESS;
}

static CUresult copy_rows(const struct side *d, const struct side *s, size_t w, size_t h)
{
    int flat = d->pitch == w && s->pitch == w;
    for (size_t row = 0, n = flat ? 1 : h; row < n; row++) {
        size_t len = flat ? w * h : w;
        CUresult r = CUDA_SUCCESS;
        if (d->host && s->host)
            memmove((uint8_t *)d->hp + row * d->pitch, s->hp + row * s->pitch, len);
        else if (s->host)
            r = cuMemcpyHtoD(d->dp + row * d->pitch, s->hp + row * s->pitch, len);
        else if (d->host)
            r = cuMemcpyDtoH((uint8_t *)d->hp + row * d->pitch, s->dp + row * s->pitch, len);
        else
            r = cuMemcpyDtoD(d->dp + row * d->pitch, s->dp + row * s->pitch, len);
        if (r)
            return r;
    }
    return CUDA_SUCCESS;
}

API CUresult cuMemcpy2D(const CUDA_MEMCPY2D *p)
{
    struct side s, d;
    CUresult r;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = side_of(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray, p->srcXInBytes,
                     p->srcY, p->srcPitch, p->WidthInBytes, p->Height, &s)) ||
        (r = side_of(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, p->dstXInBytes,
                     p->dstY, p->dstPitch, p->WidthInBytes, p->Height, &d)))
        return r;
    if (!p->WidthInBytes || !p->Height)
        return CUDA_SUCCESS;
    return copy_rows(&d, &s, p->WidthInBytes, p->Height);
}

API CUresult cuMemcpyHtoA(CUarray dstArray, size_t dstOffset, const void *srcHost,
                          size_t ByteCount)
{
    struct CUarray_st *a = live(dstArray);
    if (!a)
        return CUDA_ERROR_INVALID_HANDLE;
    if (dstOffset > a->pitch * a->rows || ByteCount > a->pitch * a->rows - dstOffset)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuMemcpyHtoA: outside the array");
    return ByteCount ? cuMemcpyHtoD(a->ptr + dstOffset, srcHost, ByteCount) : CUDA_SUCCESS;
}

API CUresult cuMemcpyAtoH(void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount)
{
    struct CUarray_st *a = live(srcArray);
    if (!a)
        return CUDA_ERROR_INVALID_HANDLE;
    if (srcOffset > a->pitch * a->rows || ByteCount > a->pitch * a->rows - srcOffset)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuMemcpyAtoH: outside the array");
    return ByteCount ? cuMemcpyDtoH(dstHost, a->ptr + srcOffset, ByteCount) : CUDA_SUCCESS;
}
