/* 2D and 3D copies (cuMemcpy2D/3D and their Async and Unaligned forms) and the copies with
 * CUDA arrays (cuMemcpyHtoA/AtoH/DtoA/AtoD/AtoA and the Async forms).  A copy moves row by
 * row (one copy when both sides are contiguous; the padding between rows is never touched);
 * a 3D copy is one 2D copy per slice.  An asynchronous copy runs in its stream's order
 * (memory.c's copies: asynchronous for pinned memory, done on return otherwise).  Arrays
 * are packed pitch-linear device memory (array.c); a 2D copy reaches an array's first slice,
 * a 3D copy any box of its slices (checked whole before anything is copied). */
#include <string.h>

#include "cuda_internal.h"

/* One side of a 2D copy: host pointer or device address of its first byte, and pitch. */
struct side {
    int host;
    const uint8_t *hp;
    CUdeviceptr dp;
    size_t pitch;
};

/* A unified address is device memory when it lies in an allocation of the context. */
static CUmemorytype resolve(CUmemorytype type, CUdeviceptr dev)
{
    if (type != CU_MEMORYTYPE_UNIFIED)
        return type;
    return cuMemGetAddressRange(NULL, NULL, dev) == CUDA_SUCCESS ? CU_MEMORYTYPE_DEVICE
                                                                 : CU_MEMORYTYPE_HOST;
}

static CUresult side_of(CUmemorytype type, const void *host, CUdeviceptr dev, CUarray arr,
                        size_t x, size_t y, size_t pitch, size_t w, size_t h, struct side *s,
                        const char *who)
{
    memset(s, 0, sizeof *s);
    if (type == CU_MEMORYTYPE_UNIFIED)
        host = (const void *)(uintptr_t)dev; /* the pointer travels in the device field */
    type = resolve(type, dev);
    if (type == CU_MEMORYTYPE_ARRAY) {
        struct CUarray_st *a = cu_array(arr);
        if (!a)
            return CUDA_ERROR_INVALID_HANDLE;
        if (x > a->pitch || w > a->pitch - x || y > a->rows || h > a->rows - y)
            return cu_fail(CUDA_ERROR_INVALID_VALUE, "%s: outside the array", who);
        s->dp = a->ptr + y * a->pitch + x;
        s->pitch = a->pitch;
        return CUDA_SUCCESS;
    }
    if (pitch < w && h > 1)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "%s: pitch below the width", who);
    s->pitch = pitch;
    if (type == CU_MEMORYTYPE_HOST) {
        s->host = 1;
        s->hp = (const uint8_t *)host + y * pitch + x;
        return host ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    }
    if (type != CU_MEMORYTYPE_DEVICE)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "%s: memory type %d", who, (int)type);
    s->dp = dev + y * pitch + x;
    return CUDA_SUCCESS;
}

static CUresult copy_one(const struct side *d, const struct side *s, size_t off_d,
                         size_t off_s, size_t len, CUstream st, int async)
{
    uint8_t *dh = (uint8_t *)d->hp + off_d;
    const uint8_t *sh = s->hp + off_s;
    if (d->host && s->host) {
        memmove(dh, sh, len);
        return CUDA_SUCCESS;
    }
    if (s->host)
        return async ? cuMemcpyHtoDAsync(d->dp + off_d, sh, len, st)
                     : cuMemcpyHtoD(d->dp + off_d, sh, len);
    if (d->host)
        return async ? cuMemcpyDtoHAsync(dh, s->dp + off_s, len, st)
                     : cuMemcpyDtoH(dh, s->dp + off_s, len);
    return async ? cuMemcpyDtoDAsync(d->dp + off_d, s->dp + off_s, len, st)
                 : cuMemcpyDtoD(d->dp + off_d, s->dp + off_s, len);
}

static CUresult copy_rows(const struct side *d, const struct side *s, size_t w, size_t h,
                          CUstream st, int async)
{
    int flat = d->pitch == w && s->pitch == w;
    for (size_t row = 0, n = flat ? 1 : h; row < n; row++) {
        CUresult r = copy_one(d, s, row * d->pitch, row * s->pitch, flat ? w * h : w, st,
                              async);
        if (r)
            return r;
    }
    return CUDA_SUCCESS;
}

CUresult cu_copy2d(const CUDA_MEMCPY2D *p, CUstream st, int async, const char *who)
{
    struct side s, d;
    CUresult r;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = side_of(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray, p->srcXInBytes,
                     p->srcY, p->srcPitch, p->WidthInBytes, p->Height, &s, who)) ||
        (r = side_of(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, p->dstXInBytes,
                     p->dstY, p->dstPitch, p->WidthInBytes, p->Height, &d, who)))
        return r;
    if (!p->WidthInBytes || !p->Height)
        return CUDA_SUCCESS;
    return copy_rows(&d, &s, p->WidthInBytes, p->Height, st, async);
}

API CUresult cuMemcpy2D(const CUDA_MEMCPY2D *p)
{
    return cu_copy2d(p, NULL, 0, "cuMemcpy2D");
}

API CUresult cuMemcpy2DUnaligned(const CUDA_MEMCPY2D *p)
{
    return cu_copy2d(p, NULL, 0, "cuMemcpy2DUnaligned"); /* no alignment is required here */
}

API CUresult cuMemcpy2DAsync(const CUDA_MEMCPY2D *p, CUstream s)
{
    return cu_copy2d(p, s, 1, "cuMemcpy2DAsync");
}

/* Slice z of one side of a 3D copy as the base of a 2D copy: pitch x height a slice. */
static CUresult slice(CUdeviceptr *dev, const void **host, size_t z, size_t pitch,
                      size_t height, size_t rows, size_t y)
{
    if (!z)
        return CUDA_SUCCESS;
    if (height < y + rows)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuMemcpy3D: a slice's height is below "
                       "Y + Height");
    *dev += z * pitch * height;
    if (*host)
        *host = (const uint8_t *)*host + z * pitch * height;
    return CUDA_SUCCESS;
}

/* An array side of a 3D copy as the device memory of its slices, after checking that the
 * box (x, y, z) + (w, h, depth) lies inside the array. */
static CUresult array_box(CUarray arr, size_t x, size_t y, size_t z, const CUDA_MEMCPY3D *p,
                          CUmemorytype *type, CUdeviceptr *dev, size_t *pitch, size_t *height)
{
    struct CUarray_st *a = cu_array(arr);
    size_t depth = p->Depth ? p->Depth : 1;
    if (!a)
        return CUDA_ERROR_INVALID_HANDLE;
    if (x > a->pitch || p->WidthInBytes > a->pitch - x || y > a->rows ||
        p->Height > a->rows - y || z > a->slices || depth > a->slices - z)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuMemcpy3D: outside the array");
    *type = CU_MEMORYTYPE_DEVICE;
    *dev = a->ptr;
    *pitch = a->pitch;
    *height = a->rows; /* invariant: pitch x rows is the array's slice pitch */
    return CUDA_SUCCESS;
}

static CUresult copy3d(const CUDA_MEMCPY3D *in, CUstream st, int async)
{
    CUDA_MEMCPY3D q;
    const CUDA_MEMCPY3D *p = &q;
    CUresult r0 = CUDA_SUCCESS;
    if (!in || in->srcLOD || in->dstLOD)
        return CUDA_ERROR_INVALID_VALUE;
    q = *in;
    if (q.srcMemoryType == CU_MEMORYTYPE_ARRAY)
        r0 = array_box(q.srcArray, q.srcXInBytes, q.srcY, q.srcZ, &q, &q.srcMemoryType,
                       &q.srcDevice, &q.srcPitch, &q.srcHeight);
    if (!r0 && q.dstMemoryType == CU_MEMORYTYPE_ARRAY)
        r0 = array_box(q.dstArray, q.dstXInBytes, q.dstY, q.dstZ, &q, &q.dstMemoryType,
                       &q.dstDevice, &q.dstPitch, &q.dstHeight);
    if (r0)
        return r0;
    for (size_t z = 0; z < (p->Depth ? p->Depth : 1); z++) {
        CUDA_MEMCPY2D two = {
            .srcXInBytes = p->srcXInBytes, .srcY = p->srcY, .srcMemoryType = p->srcMemoryType,
            .srcHost = p->srcHost, .srcDevice = p->srcDevice, .srcArray = p->srcArray,
            .srcPitch = p->srcPitch, .dstXInBytes = p->dstXInBytes, .dstY = p->dstY,
            .dstMemoryType = p->dstMemoryType, .dstHost = p->dstHost,
            .dstDevice = p->dstDevice, .dstArray = p->dstArray, .dstPitch = p->dstPitch,
            .WidthInBytes = p->WidthInBytes, .Height = p->Height};
        CUresult r = slice(&two.srcDevice, &two.srcHost, p->srcZ + z, p->srcPitch,
                           p->srcHeight, p->Height, p->srcY);
        if (!r)
            r = slice(&two.dstDevice, (const void **)&two.dstHost, p->dstZ + z, p->dstPitch,
                      p->dstHeight, p->Height, p->dstY);
        if (!r && p->Depth)
            r = cu_copy2d(&two, st, async, "cuMemcpy3D");
        if (r)
            return r;
    }
    return CUDA_SUCCESS;
}

API CUresult cuMemcpy3D(const CUDA_MEMCPY3D *p)
{
    return copy3d(p, NULL, 0);
}

API CUresult cuMemcpy3DAsync(const CUDA_MEMCPY3D *p, CUstream s)
{
    return copy3d(p, s, 1);
}

/* ---- 1D copies with arrays: a byte offset into the packed rows ------------------------ */

static CUresult array_at(CUarray h, size_t off, size_t n, CUdeviceptr *at, const char *who)
{
    struct CUarray_st *a = cu_array(h);
    if (!a)
        return CUDA_ERROR_INVALID_HANDLE;
    if (off > a->slice_pitch * a->slices || n > a->slice_pitch * a->slices - off)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "%s: outside the array", who);
    *at = a->ptr + off;
    return CUDA_SUCCESS;
}

#define AT(h, off, n, who) CUdeviceptr at_ = 0; do { CUresult r_ = array_at(h, off, n, &at_, who); \
    if (r_ || !(n)) return r_; } while (0)

API CUresult cuMemcpyHtoA(CUarray dst, size_t off, const void *src, size_t n)
{
    AT(dst, off, n, "cuMemcpyHtoA");
    return cuMemcpyHtoD(at_, src, n);
}

API CUresult cuMemcpyAtoH(void *dst, CUarray src, size_t off, size_t n)
{
    AT(src, off, n, "cuMemcpyAtoH");
    return cuMemcpyDtoH(dst, at_, n);
}

API CUresult cuMemcpyHtoAAsync(CUarray dst, size_t off, const void *src, size_t n, CUstream s)
{
    AT(dst, off, n, "cuMemcpyHtoAAsync");
    return cuMemcpyHtoDAsync(at_, src, n, s);
}

API CUresult cuMemcpyAtoHAsync(void *dst, CUarray src, size_t off, size_t n, CUstream s)
{
    AT(src, off, n, "cuMemcpyAtoHAsync");
    return cuMemcpyDtoHAsync(dst, at_, n, s);
}

API CUresult cuMemcpyDtoA(CUarray dst, size_t off, CUdeviceptr src, size_t n)
{
    AT(dst, off, n, "cuMemcpyDtoA");
    return cuMemcpyDtoD(at_, src, n);
}

API CUresult cuMemcpyAtoD(CUdeviceptr dst, CUarray src, size_t off, size_t n)
{
    AT(src, off, n, "cuMemcpyAtoD");
    return cuMemcpyDtoD(dst, at_, n);
}

API CUresult cuMemcpyAtoA(CUarray dst, size_t dst_off, CUarray src, size_t src_off, size_t n)
{
    CUdeviceptr from = 0;
    CUresult r = array_at(src, src_off, n, &from, "cuMemcpyAtoA");
    if (r)
        return r;
    AT(dst, dst_off, n, "cuMemcpyAtoA");
    return cuMemcpyDtoD(at_, from, n);
}

/* The per-thread default-stream names of these entry points (cuda_internal.h). */
PTDS(cuMemcpyDtoA) PTDS(cuMemcpyAtoD) PTDS(cuMemcpyHtoA) PTDS(cuMemcpyAtoH) PTDS(cuMemcpyAtoA)
PTSZ(cuMemcpyHtoAAsync) PTSZ(cuMemcpyAtoHAsync) PTDS(cuMemcpy2D) PTDS(cuMemcpy2DUnaligned)
PTDS(cuMemcpy3D) PTSZ(cuMemcpy2DAsync) PTSZ(cuMemcpy3DAsync)
