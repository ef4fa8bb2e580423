/* Memory and copies of the driver API (linked with gdev-py's libcuda.so.1): a pitched
 * allocation filled with cuMemsetD2D32 and copied round trip with cuMemcpy2D[Async] (the
 * padding between rows untouched), a 3D copy of two slices, a 3D copy through a 2D array
 * and the 1D array copies, peer copies within and between contexts, and the documented
 * error cases.  Prints "drv_memory2d ok" on success; the first failure names its line. */
#include <stdint.h>
#include <string.h>

#include "drv_check.h"

#define W 100 /* bytes of a row */
#define H 7

static unsigned char host[H][W], back[H][W];

static int pitched(CUstream s)
{
    CUdeviceptr d;
    size_t pitch = 0;
    CK(cuMemAllocPitch(&d, &pitch, W, H, 4));
    EXPECT(pitch >= W && pitch % 256 == 0);
    CK(cuMemsetD8(d, 0xee, pitch * H)); /* the padding's value */
    CK(cuMemsetD2D32(d, pitch, 0x01020304u, W / 4, H));
    CUDA_MEMCPY2D down = {.srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = d,
                          .srcPitch = pitch, .dstMemoryType = CU_MEMORYTYPE_HOST,
                          .dstHost = back, .dstPitch = W, .WidthInBytes = W, .Height = H};
    CK(cuMemcpy2D(&down));
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            EXPECT(back[y][x] == 4 - x % 4);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            host[y][x] = (unsigned char)(y * 31 + x);
    CUDA_MEMCPY2D up = {.srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = host, .srcPitch = W,
                        .dstMemoryType = CU_MEMORYTYPE_UNIFIED, .dstDevice = d,
                        .dstPitch = pitch, .WidthInBytes = W, .Height = H};
    CK(cuMemcpy2DAsync(&up, s));
    CK(cuMemsetD2D8Async(d + 10, pitch, 0x55, 5, H, s)); /* a column of each row */
    memset(back, 0, sizeof back);
    CK(cuMemcpy2DAsync(&down, s));
    CK(cuStreamSynchronize(s));
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            EXPECT(back[y][x] == (x >= 10 && x < 15 ? 0x55 : (unsigned char)(y * 31 + x)));
    unsigned char pad = 0;
    CK(cuMemcpyDtoH(&pad, d + W, 1));
    EXPECT(pad == 0xee);
    CK(cuMemcpy2DUnaligned(&down));
    /* the documented errors */
    size_t p2;
    CUdeviceptr d2;
    EXPECT(cuMemAllocPitch(&d2, &p2, W, H, 3) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemAllocPitch(&d2, &p2, 0, H, 4) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemsetD2D8(d, W - 1, 0, W, 2) == CUDA_ERROR_INVALID_VALUE);
    down.srcPitch = W - 1;
    EXPECT(cuMemcpy2D(&down) == CUDA_ERROR_INVALID_VALUE);
    CK(cuMemFree(d));
    return 0;
}

/* Two slices of 4 x 3 bytes out of a 6 x 5 x 2 host box into a pitched device box, back. */
static int three_d(void)
{
    unsigned char box[2][5][6], out[2][5][6];
    CUdeviceptr d;
    size_t pitch;
    for (int i = 0; i < 60; i++)
        ((unsigned char *)box)[i] = (unsigned char)i;
    CK(cuMemAllocPitch(&d, &pitch, 6, 10, 4));
    CK(cuMemsetD8(d, 0, pitch * 10));
    CUDA_MEMCPY3D p = {.srcXInBytes = 1, .srcY = 1, .srcMemoryType = CU_MEMORYTYPE_HOST,
                       .srcHost = box, .srcPitch = 6, .srcHeight = 5,
                       .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = d,
                       .dstPitch = pitch, .dstHeight = 5, .WidthInBytes = 4, .Height = 3,
                       .Depth = 2};
    p.dstXInBytes = 1, p.dstY = 1;
    CK(cuMemcpy3D(&p));
    memset(out, 0, sizeof out);
    CUDA_MEMCPY3D q = {.srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = d,
                       .srcPitch = pitch, .srcHeight = 5, .dstMemoryType = CU_MEMORYTYPE_HOST,
                       .dstHost = out, .dstPitch = 6, .dstHeight = 5, .WidthInBytes = 6,
                       .Height = 5, .Depth = 2};
    CK(cuMemcpy3DAsync(&q, NULL));
    CK(cuCtxSynchronize());
    for (int z = 0; z < 2; z++)
        for (int y = 0; y < 5; y++)
            for (int x = 0; x < 6; x++)
                EXPECT(out[z][y][x] == (x >= 1 && x < 5 && y >= 1 && y < 4 ? box[z][y][x] : 0));
    q.srcHeight = 2; /* a slice lower than its rows */
    EXPECT(cuMemcpy3D(&q) == CUDA_ERROR_INVALID_VALUE);
    CK(cuMemFree(d));
    return 0;
}

/* A 2D float array: 3D creation, a 3D copy in and out, the 1D array copies. */
static int arrays(void)
{
    CUarray a, b;
    CUDA_ARRAY3D_DESCRIPTOR desc = {.Width = 8, .Height = 4, .Format = CU_AD_FORMAT_FLOAT,
                                    .NumChannels = 1}, got;
    float in[4][8], out[4][8];
    for (int i = 0; i < 32; i++)
        ((float *)in)[i] = (float)i * 0.5f;
    CK(cuArray3DCreate(&a, &desc));
    CK(cuArray3DCreate(&b, &desc));
    CK(cuArray3DGetDescriptor(&got, a));
    EXPECT(got.Width == 8 && got.Height == 4 && got.Depth == 0 && got.NumChannels == 1);
    CUDA_MEMCPY3D up = {.srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = in, .srcPitch = 32,
                        .srcHeight = 4, .dstMemoryType = CU_MEMORYTYPE_ARRAY, .dstArray = a,
                        .WidthInBytes = 32, .Height = 4, .Depth = 1};
    CK(cuMemcpy3D(&up));
    CK(cuMemcpyAtoA(b, 0, a, 0, sizeof in));
    CUdeviceptr d;
    CK(cuMemAlloc(&d, sizeof in));
    CK(cuMemcpyAtoD(d, b, 32, sizeof in - 32)); /* rows 1..3 */
    CK(cuMemcpyDtoA(a, 0, d, 32));              /* row 1 onto row 0 */
    CK(cuMemcpyAtoHAsync(out, a, 0, sizeof out, NULL));
    CK(cuCtxSynchronize());
    for (int x = 0; x < 8; x++)
        EXPECT(out[0][x] == in[1][x] && out[3][x] == in[3][x]);
    CK(cuMemcpyHtoAAsync(b, 4, in, 4, NULL));
    CK(cuMemcpyAtoH(out, b, 0, 8));
    EXPECT(out[0][1] == in[0][0]);
    EXPECT(cuMemcpyAtoH(out, b, 1, sizeof in) == CUDA_ERROR_INVALID_VALUE);
    CUarray vol;
    desc.Depth = 2; /* a 3D array of two slices (tests/programs/apps/tex3d_app.cu uses them) */
    CK(cuArray3DCreate(&vol, &desc));
    CK(cuArray3DGetDescriptor(&got, vol));
    EXPECT(got.Depth == 2);
    up.Depth = 2;
    EXPECT(cuMemcpy3D(&up) == CUDA_ERROR_INVALID_VALUE); /* a 2D array has one slice */
    desc.Flags = 0x10; /* CUDA_ARRAY3D_DEPTH_TEXTURE */
    EXPECT(cuArray3DCreate(&vol, &desc) == CUDA_ERROR_NOT_SUPPORTED);
    CK(cuArrayDestroy(vol));
    CK(cuArrayDestroy(b));
    CK(cuMemFree(d));
    return 0;
}

/* A 3D peer copy of the box (8, 1, 1) + (24 bytes, 2, 3) of src (64-byte pitch, 4 rows per
 * slice) in context `from` to (4, 2, 0) of dst (32-byte pitch, 8 rows) in context `to`,
 * checked byte by byte against the host's copy of src, v (1024 bytes); dst was zeroed. */
static int box3d(CUdeviceptr dst, CUcontext to, CUdeviceptr src, CUcontext from,
                 const unsigned char *v, int async)
{
    unsigned char got[1024], want[1024] = {0};
    CUDA_MEMCPY3D_PEER p = {.srcXInBytes = 8, .srcY = 1, .srcZ = 1,
                            .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = src,
                            .srcContext = from, .srcPitch = 64, .srcHeight = 4,
                            .dstXInBytes = 4, .dstY = 2, .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                            .dstDevice = dst, .dstContext = to, .dstPitch = 32,
                            .dstHeight = 8, .WidthInBytes = 24, .Height = 2, .Depth = 3};
    for (int z = 0; z < 3; z++)
        for (int y = 0; y < 2; y++)
            memcpy(want + (z * 8 + 2 + y) * 32 + 4, v + ((1 + z) * 4 + 1 + y) * 64 + 8, 24);
    if (async) {
        CK(cuMemcpy3DPeerAsync(&p, NULL));
        CK(cuCtxSynchronize());
    } else {
        CK(cuMemcpy3DPeer(&p));
    }
    CK(cuCtxPushCurrent(to));
    CK(cuMemcpyDtoH(got, dst, sizeof got));
    CK(cuCtxPopCurrent(NULL));
    EXPECT(!memcmp(got, want, sizeof got));
    return 0;
}

/* Peer copies: within one context a device-to-device copy, between two through the host. */
static int peers(CUcontext ctx, CUdevice dev)
{
    CUcontext other;
    CUdeviceptr a, b;
    unsigned v[256], w[256];
    int can = 1;
    for (int i = 0; i < 256; i++)
        v[i] = 7u * (unsigned)i;
    CK(cuMemAlloc(&a, sizeof v));
    CK(cuMemAlloc(&b, sizeof v));
    CK(cuMemcpyHtoD(a, v, sizeof v));
    CK(cuMemcpyPeer(b, ctx, a, ctx, sizeof v));
    CK(cuCtxCreate(&other, NULL, 0, dev));
    CUdeviceptr c;
    CK(cuMemAlloc(&c, sizeof v));
    CK(cuMemcpyPeerAsync(c, other, b, ctx, sizeof v, NULL));
    memset(w, 0, sizeof w);
    CK(cuMemcpyDtoH(w, c, sizeof w));
    EXPECT(!memcmp(v, w, sizeof v));
    /* 3D: between the two contexts (staged), then within ctx (a plain 3D copy) */
    CK(cuMemsetD8(c, 0, sizeof v));
    if (box3d(c, other, a, ctx, (const unsigned char *)v, 0))
        return 1;
    CK(cuCtxPushCurrent(ctx));
    CK(cuMemsetD8(b, 0, sizeof v));
    if (box3d(b, ctx, a, ctx, (const unsigned char *)v, 1))
        return 1;
    CK(cuCtxPopCurrent(NULL));
    /* into an array of the other context: staged too (the array's own context) */
    CUarray arr;
    CUDA_ARRAY_DESCRIPTOR ad = {.Width = 16, .Height = 4, .Format = CU_AD_FORMAT_UNSIGNED_INT8,
                                .NumChannels = 1};
    unsigned char rows[64], want_rows[64];
    CK(cuArrayCreate(&arr, &ad));
    CUDA_MEMCPY3D_PEER to_arr = {.srcXInBytes = 3, .srcMemoryType = CU_MEMORYTYPE_DEVICE,
                                 .srcDevice = a, .srcContext = ctx, .srcPitch = 32,
                                 .srcHeight = 4, .dstMemoryType = CU_MEMORYTYPE_ARRAY,
                                 .dstArray = arr, .WidthInBytes = 16, .Height = 4, .Depth = 1};
    CK(cuMemcpy3DPeer(&to_arr));
    CK(cuMemcpyAtoH(rows, arr, 0, sizeof rows));
    for (int y = 0; y < 4; y++)
        memcpy(want_rows + 16 * y, (const unsigned char *)v + 32 * y + 3, 16);
    EXPECT(!memcmp(rows, want_rows, sizeof rows));
    CK(cuArrayDestroy(arr));
    CUDA_MEMCPY3D_PEER bad = {.srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = a,
                              .srcContext = ctx, .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                              .dstDevice = c, .dstContext = NULL, .WidthInBytes = 4,
                              .Height = 1, .Depth = 1};
    EXPECT(cuMemcpy3DPeer(&bad) == CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(cuCtxEnablePeerAccess(ctx, 0) == CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
    EXPECT(cuCtxEnablePeerAccess(other, 0) == CUDA_ERROR_INVALID_DEVICE); /* itself */
    EXPECT(cuCtxDisablePeerAccess(ctx) == CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
    CK(cuDeviceCanAccessPeer(&can, dev, dev));
    EXPECT(can == 0);
    CK(cuCtxDestroy(other));
    CK(cuCtxSetCurrent(ctx));
    CK(cuMemFree(a));
    CK(cuMemFree(b));
    return 0;
}

/* Batched copies (both of CUDA's forms) and the 1D linear texture limit. */
typedef CUresult (*batch_v1_fn)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t,
                                CUmemcpyAttributes *, size_t *, size_t, size_t *, CUstream);
static int batches(CUdevice dev, CUstream s)
{
    int h1[4] = {1, 2, 3, 4}, h2[4] = {5, 6, 7, 8}, back[8] = {0};
    CUdeviceptr d;
    CK(cuMemAlloc(&d, sizeof back));
    CUdeviceptr dsts[] = {d, d + sizeof h1, (CUdeviceptr)(uintptr_t)back};
    CUdeviceptr srcs[] = {(CUdeviceptr)(uintptr_t)h1, (CUdeviceptr)(uintptr_t)h2, d};
    size_t sizes[] = {sizeof h1, sizeof h2, sizeof back}, idx = 0, bad_idx = 1, fail = 7;
    CUmemcpyAttributes at = {.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM};
    CK(cuMemcpyBatchAsync(dsts, srcs, sizes, 2, &at, &idx, 1, s));
    CK(cuMemcpyBatchAsync(dsts + 2, srcs + 2, sizes + 2, 1, &at, &idx, 1, s));
    CK(cuStreamSynchronize(s));
    EXPECT(back[0] + back[3] == 5 && back[4] + back[7] == 13);
    EXPECT(cuMemcpyBatchAsync(dsts, srcs, sizes, 2, &at, &bad_idx, 1, s) ==
           CUDA_ERROR_INVALID_VALUE);
    void *fn = NULL;
    CUdriverProcAddressQueryResult q;
    CK(cuGetProcAddress("cuMemcpyBatchAsync", &fn, 12080, 0, &q));
    srcs[0] = 0; /* the first copy fails: CUDA 12.8's form names it */
    EXPECT(((batch_v1_fn)fn)(dsts, srcs, sizes, 2, &at, &idx, 1, &fail, s) != CUDA_SUCCESS);
    EXPECT(fail == 0);
    EXPECT(((batch_v1_fn)fn)(dsts, srcs, sizes, 2, &at, &bad_idx, 1, &fail, s) ==
           CUDA_ERROR_INVALID_VALUE && fail == SIZE_MAX);
    size_t width = 0;
    CK(cuDeviceGetTexture1DLinearMaxWidth(&width, CU_AD_FORMAT_FLOAT, 4, dev));
    EXPECT(width == 1u << 27);
    EXPECT(cuDeviceGetTexture1DLinearMaxWidth(&width, CU_AD_FORMAT_FLOAT, 3, dev) ==
           CUDA_ERROR_INVALID_VALUE);
    CK(cuMemFree(d));
    return 0;
}

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUstream s;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuCtxCreate(&ctx, NULL, 0, dev));
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    if (pitched(s) || three_d() || arrays() || batches(dev, s) || peers(ctx, dev))
        return 1;
    CK(cuStreamDestroy(s));
    CK(cuCtxDestroy(ctx));
    printf("drv_memory2d ok\n");
    return 0;
}
