// The CUDA runtime API beyond launches, as suites use it: device properties, __constant__
// and __device__ symbols, pinned memory, streams and events, memset, async copies, errors.
// Built by nvcc -cudart shared, run through scripts/gdev-run; prints "rt_features ok".
#include <cstdio>
#include <cstring>

__constant__ float scale[4];
__device__ unsigned int hits;

__global__ void saxpy(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = scale[0] * x[i] + y[i];
        atomicAdd(&hits, 1u);
    }
}

__global__ void tile(float *o)
{
    __shared__ float t[256];
    extern __shared__ float more[];
    t[threadIdx.x] = threadIdx.x;
    more[threadIdx.x] = 1.0f;
    __syncthreads();
    o[threadIdx.x] = t[255 - threadIdx.x] + more[threadIdx.x];
}

#include "rt_check.h"

// cudaFuncGetAttributes' sizes, and what cudaFuncSetAttribute sets said back (shared=1024
// dyn=64512 set=8192 too_big=cudaErrorInvalidValue carveout=50 readonly=...).
static int function_attributes(void)
{
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, tile));
    printf("attrs shared=%zu dyn=%d carveout=%d", fa.sharedSizeBytes,
           fa.maxDynamicSharedSizeBytes, fa.preferredShmemCarveout);
    CK(cudaFuncSetAttribute(tile, cudaFuncAttributeMaxDynamicSharedMemorySize, 8192));
    CK(cudaFuncSetAttribute(tile, cudaFuncAttributePreferredSharedMemoryCarveout, 50));
    cudaError_t too_big =
        cudaFuncSetAttribute(tile, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536);
    cudaGetLastError();
    CK(cudaFuncGetAttributes(&fa, tile));
    printf(" set=%d too_big=%s carveout=%d\n", fa.maxDynamicSharedSizeBytes,
           cudaGetErrorName(too_big), fa.preferredShmemCarveout);
    return 0;
}

static void host_fn(void *flag)
{
    *(int *)flag = 1;
}

// 2D copies with padding, pointer attributes, host functions, limits, occupancy.
static int more_features(float *x, const float *hx)
{
    const int w = 37, h = 5;
    float *p, back[h][w], rows[h][w];
    size_t pitch = 0;
    for (int r = 0; r < h; r++)
        for (int c = 0; c < w; c++)
            rows[r][c] = r * 100.0f + c;
    CK(cudaMallocPitch(&p, &pitch, w * sizeof(float), h));
    CK(cudaMemset2D(p, pitch, 0, w * sizeof(float), h));
    CK(cudaMemcpy2D(p, pitch, rows, sizeof rows[0], w * sizeof(float), h,
                    cudaMemcpyHostToDevice));
    CK(cudaMemcpy2D(back, sizeof back[0], p, pitch, w * sizeof(float), h,
                    cudaMemcpyDeviceToHost));
    if (pitch % 256 || memcmp(back, rows, sizeof rows)) {
        printf("2D copy mismatch (pitch %zu)\n", pitch);
        return 1;
    }
    cudaPointerAttributes a;
    CK(cudaPointerGetAttributes(&a, x));
    int dev_ok = a.type == cudaMemoryTypeDevice;
    CK(cudaPointerGetAttributes(&a, hx));
    int host_ok = a.type == cudaMemoryTypeHost && a.devicePointer;
    int flag = 0, blocks = 0;
    CK(cudaLaunchHostFunc(0, host_fn, &flag));
    size_t stack = 0;
    CK(cudaDeviceSetLimit(cudaLimitStackSize, 4096));
    CK(cudaDeviceGetLimit(&stack, cudaLimitStackSize));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, saxpy, 256, 0));
    CK(cudaFree(p));
    void *q = nullptr;
    int peer = -1;
    CK(cudaMallocAsync(&q, 4096, 0));
    CK(cudaMemsetAsync(q, 1, 4096, 0));
    CK(cudaFreeAsync(q, 0));
    CK(cudaDeviceCanAccessPeer(&peer, 0, 1));
    cudaFuncAttributes fa;          // CUB picks its kernels' tuning by ptxVersion
    CK(cudaFuncGetAttributes(&fa, saxpy));
    if (function_attributes())
        return 1;
    printf("more ok dev=%d host=%d hostfn=%d stack=%zu blocks=%d peer=%d ptx=%d bin=%d\n",
           dev_ok, host_ok, flag, stack, blocks, peer, fa.ptxVersion, fa.binaryVersion);
    return 0;
}

int main()
{
    const int n = 5000;
    int count = 0, dev = -1, version = 0;
    cudaDeviceProp prop;
    CK(cudaGetDeviceCount(&count));
    CK(cudaSetDevice(count - 1));
    CK(cudaGetDevice(&dev));
    CK(cudaGetDeviceProperties(&prop, dev));
    CK(cudaRuntimeGetVersion(&version));
    float *x, *y, *hx, *hy;
    CK(cudaMalloc(&x, n * sizeof(float)));
    CK(cudaMalloc(&y, n * sizeof(float)));
    CK(cudaMallocHost(&hx, n * sizeof(float)));
    CK(cudaHostAlloc(&hy, n * sizeof(float), cudaHostAllocDefault));
    for (int i = 0; i < n; i++)
        hx[i] = (float)i;
    const float s[4] = {3.0f, 0, 0, 0};
    CK(cudaMemcpyToSymbol(scale, s, sizeof s));
    CK(cudaMemset(y, 0, n * sizeof(float)));
    cudaStream_t st;
    cudaEvent_t e0, e1;
    CK(cudaStreamCreate(&st));
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaMemcpyAsync(x, hx, n * sizeof(float), cudaMemcpyHostToDevice, st));
    CK(cudaEventRecord(e0, st));
    saxpy<<<(n + 255) / 256, 256, 0, st>>>(x, y, n);
    saxpy<<<(n + 255) / 256, 256, 0, st>>>(x, y, n);
    CK(cudaGetLastError());
    CK(cudaEventRecord(e1, st));
    CK(cudaMemcpyAsync(hy, y, n * sizeof(float), cudaMemcpyDeviceToHost, st));
    CK(cudaStreamSynchronize(st));
    float ms = -1;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    unsigned int h = 0;
    CK(cudaMemcpyFromSymbol(&h, hits, sizeof h));
    for (int i = 0; i < n; i++)
        if (hy[i] != 6.0f * i) {
            printf("y[%d] = %f, want %f\n", i, hy[i], 6.0f * i);
            return 1;
        }
    if (more_features(x, hx))
        return 1;
    saxpy<<<1, 4096>>>(x, y, n); // too many threads per block: the launch fails
    cudaError_t bad = cudaGetLastError();
    cudaError_t after = cudaGetLastError(); // reading clears it
    void *huge = nullptr;
    cudaError_t oom = cudaMalloc(&huge, prop.totalGlobalMem + (1ull << 30));
    cudaGetLastError();
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    CK(cudaStreamDestroy(st));
    CK(cudaFreeHost(hx));
    CK(cudaFreeHost(hy));
    CK(cudaFree(x));
    CK(cudaFree(y));
    CK(cudaDeviceSynchronize());
    CK(cudaDeviceReset());
    printf("rt_features ok device=%d/%d name=%s cc=%d.%d mem=%zu hits=%u ms=%.3f "
           "bad_launch=%s after=%s oom=%s version=%d\n", dev, count, prop.name, prop.major,
           prop.minor, prop.totalGlobalMem, h, ms, cudaGetErrorName(bad),
           cudaGetErrorName(after), cudaGetErrorName(oom), version);
    return 0;
}
