// Texture objects through the runtime API, as public programs use them (simpleTexture's
// pitched float image with linear filtering, normalised coordinates and wrap; an image
// filter's tex1Dfetch of uchar4 texels read as normalised floats).  Prints every sample in
// hex floats; tests/clib/test_texture_program.py checks them against CUDA's sampling rules.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    printf("FAIL %s: %s\n", #x, cudaGetErrorName(e_)); return 1; } } while (0)

__global__ void sample2d(cudaTextureObject_t t, const float2 *uv, float *out, int n)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) out[k] = tex2D<float>(t, uv[k].x, uv[k].y);
}

__global__ void fetch4(cudaTextureObject_t t, float4 *out, int n)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) out[k] = tex1Dfetch<float4>(t, k - 2);   // two before, two past the buffer
}

// simpleSurfaceWrite's shape: a kernel writes every texel of an array through a surface
__global__ void surface_fill(cudaSurfaceObject_t s, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < w && y < h) {
        float v = surf2Dread<float>(s, x * 4, y);
        surf2Dwrite(v * 2.0f + (float)(y * w + x), s, x * 4, y);
    }
}

static int surface_test(void)
{
    const int w = 7, h = 3;
    float img[h][w], back[h][w];
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            img[y][x] = 0.25f * (float)(x - y);
    cudaChannelFormatDesc cd = cudaCreateChannelDesc<float>();
    cudaArray_t arr;
    CHECK(cudaMallocArray(&arr, &cd, w, h, cudaArraySurfaceLoadStore));
    CHECK(cudaMemcpy2DToArray(arr, 0, 0, img, w * sizeof(float), w * sizeof(float), h,
                              cudaMemcpyHostToDevice));
    cudaResourceDesc res = {};
    res.resType = cudaResourceTypeArray;
    res.res.array.array = arr;
    cudaSurfaceObject_t surf = 0;
    CHECK(cudaCreateSurfaceObject(&surf, &res));
    surface_fill<<<dim3(1, h), 32>>>(surf, w, h);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy2DFromArray(back, w * sizeof(float), arr, 0, 0, w * sizeof(float), h,
                                cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            bad += back[y][x] != img[y][x] * 2.0f + (float)(y * w + x);
    printf("surface %s\n", bad ? "differs" : "ok");
    CHECK(cudaDestroySurfaceObject(surf));
    CHECK(cudaFreeArray(arr));
    return 0;
}

static int image_test(void)
{
    const int w = 13, h = 7, n = 200;
    float img[h][w];
    float2 uv[n];
    float out[n];
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            img[y][x] = (float)((x * 7 + y * 13) % 17) - 4.25f;
    srand(5);
    for (int k = 0; k < n; k++)
        uv[k] = make_float2(rand() / (float)RAND_MAX * 3.0f - 1.0f,
                            rand() / (float)RAND_MAX * 3.0f - 1.0f);
    float *d_img, *d_out;
    float2 *d_uv;
    size_t pitch;
    CHECK(cudaMallocPitch((void **)&d_img, &pitch, w * sizeof(float), h));
    CHECK(cudaMemcpy2D(d_img, pitch, img, w * sizeof(float), w * sizeof(float), h,
                       cudaMemcpyHostToDevice));
    cudaResourceDesc res = {};
    res.resType = cudaResourceTypePitch2D;
    res.res.pitch2D.devPtr = d_img;
    res.res.pitch2D.desc = cudaCreateChannelDesc<float>();
    res.res.pitch2D.width = w;
    res.res.pitch2D.height = h;
    res.res.pitch2D.pitchInBytes = pitch;
    cudaTextureDesc td = {};
    td.addressMode[0] = cudaAddressModeWrap;
    td.addressMode[1] = cudaAddressModeWrap;
    td.filterMode = cudaFilterModeLinear;
    td.readMode = cudaReadModeElementType;
    td.normalizedCoords = 1;
    cudaTextureObject_t tex = 0;
    CHECK(cudaCreateTextureObject(&tex, &res, &td, NULL));
    cudaResourceDesc back;
    CHECK(cudaGetTextureObjectResourceDesc(&back, tex));
    printf("desc %d %zu %zu %d %d\n", (int)back.resType, back.res.pitch2D.width,
           back.res.pitch2D.height, back.res.pitch2D.desc.x, (int)back.res.pitch2D.desc.f);
    CHECK(cudaMalloc(&d_uv, sizeof uv));
    CHECK(cudaMalloc(&d_out, sizeof out));
    CHECK(cudaMemcpy(d_uv, uv, sizeof uv, cudaMemcpyHostToDevice));
    sample2d<<<(n + 63) / 64, 64>>>(tex, d_uv, d_out, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(out, d_out, sizeof out, cudaMemcpyDeviceToHost));
    printf("image %d %d %d\n", w, h, n);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            printf("%a\n", img[y][x]);
    for (int k = 0; k < n; k++)
        printf("%a %a %a\n", uv[k].x, uv[k].y, out[k]);
    CHECK(cudaDestroyTextureObject(tex));
    CHECK(cudaFree(d_img));
    CHECK(cudaFree(d_uv));
    CHECK(cudaFree(d_out));
    return 0;
}

static int fetch_test(void)
{
    const int n = 10;
    uchar4 pix[n - 4];
    float4 out[n];
    for (int k = 0; k < n - 4; k++)
        pix[k] = make_uchar4(k * 40, 255 - k, k, 128);
    uchar4 *d_pix;
    float4 *d_out;
    CHECK(cudaMalloc(&d_pix, sizeof pix));
    CHECK(cudaMalloc(&d_out, sizeof out));
    CHECK(cudaMemcpy(d_pix, pix, sizeof pix, cudaMemcpyHostToDevice));
    cudaResourceDesc res = {};
    res.resType = cudaResourceTypeLinear;
    res.res.linear.devPtr = d_pix;
    res.res.linear.desc = cudaCreateChannelDesc<uchar4>();
    res.res.linear.sizeInBytes = sizeof pix;
    cudaTextureDesc td = {};
    td.readMode = cudaReadModeNormalizedFloat;
    cudaTextureObject_t tex = 0;
    CHECK(cudaCreateTextureObject(&tex, &res, &td, NULL));
    fetch4<<<1, 32>>>(tex, d_out, n);
    CHECK(cudaMemcpy(out, d_out, sizeof out, cudaMemcpyDeviceToHost));
    printf("fetch %d\n", n);
    for (int k = 0; k < n; k++)
        printf("%a %a %a %a\n", out[k].x, out[k].y, out[k].z, out[k].w);
    CHECK(cudaDestroyTextureObject(tex));
    printf("destroy again %s\n", cudaGetErrorName(cudaDestroyTextureObject(tex)));
    cudaGetLastError();   // clear the expected failure, as CUDA programs do
    CHECK(cudaFree(d_pix));
    CHECK(cudaFree(d_out));
    return 0;
}

// simpleTexture's shape: a CUDA array filled by cudaMemcpy2DToArray, point-sampled by tex2D
// with clamping; the array read back by cudaMemcpy2DFromArray.
static int array_test(void)
{
    const int w = 6, h = 4, n = 6;
    float img[h][w], back[h][w];
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            img[y][x] = (float)(y * 10 + x);
    cudaChannelFormatDesc cd = cudaCreateChannelDesc<float>();
    cudaArray_t arr;
    CHECK(cudaMallocArray(&arr, &cd, w, h));
    CHECK(cudaMemcpy2DToArrayAsync(arr, 0, 0, img, w * sizeof(float), w * sizeof(float), h,
                                   cudaMemcpyHostToDevice, 0));
    // through a second array and the asynchronous forms on a stream
    cudaArray_t arr2;
    cudaStream_t st;
    CHECK(cudaMallocArray(&arr2, &cd, w, h));
    CHECK(cudaStreamCreate(&st));
    CHECK(cudaMemcpy2DArrayToArray(arr2, 0, 0, arr, 0, 0, w * sizeof(float), h,
                                   cudaMemcpyDeviceToDevice));
    CHECK(cudaMemcpy2DFromArrayAsync(back, w * sizeof(float), arr2, 0, 0, w * sizeof(float), h,
                                     cudaMemcpyDeviceToHost, st));
    CHECK(cudaStreamSynchronize(st));
    CHECK(cudaStreamDestroy(st));
    // the deprecated linear forms: rows 1 and 2 plus 3 floats of row 3, out and back in
    float part[2 * w + 3], zero[2 * w + 3] = {0}, again[2 * w + 3];
    CHECK(cudaMemcpyFromArray(part, arr2, 0, 1, sizeof part, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpyToArray(arr2, 0, 1, zero, sizeof zero, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpyFromArray(again, arr2, 0, 1, sizeof again, cudaMemcpyDeviceToHost));
    if (memcmp(part, &img[1][0], sizeof part) || memcmp(again, zero, sizeof zero)) {
        printf("FAIL linear array copies\n");
        return 1;
    }
    CHECK(cudaFreeArray(arr2));
    cudaChannelFormatDesc got_cd;
    cudaExtent ext;
    CHECK(cudaArrayGetInfo(&got_cd, &ext, NULL, arr));
    cudaResourceDesc res = {};
    res.resType = cudaResourceTypeArray;
    res.res.array.array = arr;
    cudaTextureDesc td = {};
    td.addressMode[0] = cudaAddressModeClamp;
    td.addressMode[1] = cudaAddressModeClamp;
    cudaTextureObject_t tex = 0;
    CHECK(cudaCreateTextureObject(&tex, &res, &td, NULL));
    float2 uv[n] = {{0.5f, 0.5f}, {5.5f, 3.5f}, {2.2f, 1.9f}, {-3.0f, 2.5f}, {9.0f, 9.0f},
                    {3.99f, 0.01f}};
    float out[n], *d_out;
    float2 *d_uv;
    CHECK(cudaMalloc(&d_uv, sizeof uv));
    CHECK(cudaMalloc(&d_out, sizeof out));
    CHECK(cudaMemcpy(d_uv, uv, sizeof uv, cudaMemcpyHostToDevice));
    sample2d<<<1, 32>>>(tex, d_uv, d_out, n);
    CHECK(cudaMemcpy(out, d_out, sizeof out, cudaMemcpyDeviceToHost));
    printf("array info %d %zu %zu back %s samples", got_cd.x, ext.width, ext.height,
           memcmp(img, back, sizeof img) ? "differs" : "equal");
    for (int k = 0; k < n; k++)
        printf(" %g", out[k]);
    printf("\n");
    CHECK(cudaDestroyTextureObject(tex));
    CHECK(cudaFreeArray(arr));
    CHECK(cudaFree(d_uv));
    CHECK(cudaFree(d_out));
    return 0;
}

int main(void)
{
    if (image_test() || fetch_test() || array_test() || surface_test())
        return 1;
    printf("rt_texture ok\n");
    return 0;
}
