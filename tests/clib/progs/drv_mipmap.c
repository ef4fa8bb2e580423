/* Mipmapped arrays of the driver API (linked with gdev-py's libcuda.so.1): the levels of 2D,
 * 1D, 3D and layered mipmapped arrays (sizes halve, floored, at least 1; a 3D depth halves,
 * layers stay), each level a CUarray that copies reach without touching its neighbours, a
 * texture object over all levels and one over a level, a surface over a level, and the
 * documented error cases (too many levels, a level past the last, a level destroyed on its
 * own, a second destroy, a destroyed one's levels).  Prints "drv_mipmap ok" on success; the
 * first failure names its line. */
#include <string.h>

#include "drv_check.h"

static int level_sizes(void)
{
    struct { size_t w, h, d; unsigned flags, levels; } cases[] = {
        {64, 32, 0, 0, 7}, {40, 0, 0, 0, 6}, {16, 8, 4, 0, 5}, {16, 16, 3, CUDA_ARRAY3D_LAYERED, 5},
        {8, 8, 6, CUDA_ARRAY3D_CUBEMAP, 4},
    };
    for (unsigned k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        CUDA_ARRAY3D_DESCRIPTOR d = {.Width = cases[k].w, .Height = cases[k].h,
                                     .Depth = cases[k].d, .Format = CU_AD_FORMAT_FLOAT,
                                     .NumChannels = 2, .Flags = cases[k].flags}, got;
        CUmipmappedArray m;
        CUarray a;
        EXPECT(cuMipmappedArrayCreate(&m, &d, cases[k].levels + 1) ==
               CUDA_ERROR_INVALID_VALUE);
        CK(cuMipmappedArrayCreate(&m, &d, cases[k].levels));
        for (unsigned l = 0; l < cases[k].levels; l++) {
            size_t w = d.Width >> l ? d.Width >> l : 1, h = d.Height >> l ? d.Height >> l : 1;
            size_t z = d.Flags ? d.Depth : d.Depth >> l ? d.Depth >> l : d.Depth ? 1 : 0;
            CK(cuMipmappedArrayGetLevel(&a, m, l));
            CK(cuArray3DGetDescriptor(&got, a));
            EXPECT(got.Width == w && got.Height == (d.Height ? h : 0) && got.Depth == z &&
                   got.Flags == d.Flags && got.NumChannels == 2);
            EXPECT(cuArrayDestroy(a) == CUDA_ERROR_INVALID_HANDLE);
        }
        EXPECT(cuMipmappedArrayGetLevel(&a, m, cases[k].levels) == CUDA_ERROR_INVALID_VALUE);
        CK(cuMipmappedArrayDestroy(m));
        EXPECT(cuMipmappedArrayDestroy(m) == CUDA_ERROR_INVALID_HANDLE);
        EXPECT(cuMipmappedArrayGetLevel(&a, m, 0) == CUDA_ERROR_INVALID_HANDLE);
    }
    return 0;
}

/* Each level of a 2D float mipmapped array written whole, then read back: no level's copy
 * reaches another's texels. */
static int level_copies(CUmipmappedArray m, unsigned levels)
{
    static float host[32 * 16], back[32 * 16];
    for (unsigned l = 0; l < levels; l++) {
        CUarray a;
        size_t w = 32 >> l ? 32 >> l : 1, h = 16 >> l ? 16 >> l : 1;
        CK(cuMipmappedArrayGetLevel(&a, m, l));
        for (size_t k = 0; k < w * h; k++)
            host[k] = (float)(l * 1000 + k);
        CUDA_MEMCPY2D up = {.srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = host,
                            .srcPitch = w * 4, .dstMemoryType = CU_MEMORYTYPE_ARRAY,
                            .dstArray = a, .WidthInBytes = w * 4, .Height = h};
        CK(cuMemcpy2D(&up));
    }
    for (unsigned l = 0; l < levels; l++) {
        CUarray a;
        size_t w = 32 >> l ? 32 >> l : 1, h = 16 >> l ? 16 >> l : 1;
        CK(cuMipmappedArrayGetLevel(&a, m, l));
        CUDA_MEMCPY2D down = {.srcMemoryType = CU_MEMORYTYPE_ARRAY, .srcArray = a,
                              .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = back,
                              .dstPitch = w * 4, .WidthInBytes = w * 4, .Height = h};
        CK(cuMemcpy2D(&down));
        for (size_t k = 0; k < w * h; k++)
            EXPECT(back[k] == (float)(l * 1000 + k));
    }
    return 0;
}

static int objects(CUmipmappedArray m)
{
    CUDA_RESOURCE_DESC rd;
    CUDA_TEXTURE_DESC td, back;
    CUtexObject t, t1;
    CUsurfObject s;
    CUarray a;
    memset(&rd, 0, sizeof rd);
    memset(&td, 0, sizeof td);
    rd.resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
    rd.res.mipmap.hMipmappedArray = m;
    td.flags = CU_TRSF_NORMALIZED_COORDINATES;
    td.filterMode = CU_TR_FILTER_MODE_LINEAR;
    td.mipmapFilterMode = CU_TR_FILTER_MODE_LINEAR;
    td.maxMipmapLevelClamp = 4.0f;
    td.mipmapLevelBias = -0.5f;
    td.maxAnisotropy = 8;
    CK(cuTexObjectCreate(&t, &rd, &td, NULL));
    CK(cuTexObjectGetTextureDesc(&back, t));
    EXPECT(back.mipmapFilterMode == CU_TR_FILTER_MODE_LINEAR && back.mipmapLevelBias == -0.5f &&
           back.maxMipmapLevelClamp == 4.0f && back.maxAnisotropy == 8);
    td.minMipmapLevelClamp = 5.0f; /* above the maximum: refused by the daemon */
    EXPECT(cuTexObjectCreate(&t1, &rd, &td, NULL) == CUDA_ERROR_INVALID_VALUE);
    td.minMipmapLevelClamp = 0.0f;
    td.mipmapFilterMode = (CUfilter_mode)2;
    EXPECT(cuTexObjectCreate(&t1, &rd, &td, NULL) == CUDA_ERROR_INVALID_VALUE);
    rd.res.mipmap.hMipmappedArray = (CUmipmappedArray)&td; /* not one of ours */
    td.mipmapFilterMode = CU_TR_FILTER_MODE_POINT;
    EXPECT(cuTexObjectCreate(&t1, &rd, &td, NULL) == CUDA_ERROR_INVALID_HANDLE);
    CK(cuMipmappedArrayGetLevel(&a, m, 2));
    rd.resType = CU_RESOURCE_TYPE_ARRAY;
    rd.res.array.hArray = a;
    CK(cuTexObjectCreate(&t1, &rd, &td, NULL));
    CK(cuSurfObjectCreate(&s, &rd));
    CK(cuSurfObjectDestroy(s));
    CK(cuTexObjectDestroy(t1));
    CK(cuTexObjectDestroy(t));
    return 0;
}

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUmipmappedArray m;
    CUDA_ARRAY3D_DESCRIPTOR d = {.Width = 32, .Height = 16, .Format = CU_AD_FORMAT_FLOAT,
                                 .NumChannels = 1};
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuCtxCreate(&ctx, NULL, 0, dev));
    if (level_sizes())
        return 1;
    EXPECT(cuMipmappedArrayCreate(&m, &d, 0) == CUDA_ERROR_INVALID_VALUE);
    CK(cuMipmappedArrayCreate(&m, &d, 6));
    if (level_copies(m, 6) || objects(m))
        return 1;
    CK(cuMipmappedArrayDestroy(m));
    CK(cuMipmappedArrayCreate(&m, &d, 3)); /* left for cuCtxDestroy to free */
    CK(cuCtxDestroy(ctx));
    printf("drv_mipmap ok\n");
    return 0;
}
