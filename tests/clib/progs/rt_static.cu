// A program as nvcc builds it by default: NVIDIA's static runtime (libcudart_static.a) inside
// it, over gdev-py's libcuda.so.1 (export.c: the driver's private tables it asks for, the
// integrity check, context-local storage, primary contexts with stable handles).  Every line
// it prints is checked by tests/clib/test_static_runtime.py.
#include <cstdio>

#include "rt_check.h"

__global__ void axpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}

__global__ void big_shared(int *out)
{
    extern __shared__ int s[];
    s[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = s[blockDim.x - 1 - threadIdx.x];
}

__global__ void say(int v)
{
    printf("kernel says %d\n", v + (int)threadIdx.x);
}

__constant__ int scale[4];

__global__ void scaled(int *out)
{
    out[threadIdx.x] = scale[threadIdx.x] * 10;
}

static int axpy_round(int n, float a)
{
    float hx[1000], hy[1000];
    float *x, *y;
    for (int i = 0; i < n; i++)
        hx[i] = (float)i, hy[i] = 1.0f;
    CK(cudaMalloc(&x, n * sizeof(float)));
    CK(cudaMalloc(&y, n * sizeof(float)));
    CK(cudaMemcpy(x, hx, n * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(y, hy, n * sizeof(float), cudaMemcpyHostToDevice));
    axpy<<<(n + 255) / 256, 256>>>(a, x, y, n);
    CK(cudaGetLastError());
    CK(cudaMemcpy(hy, y, n * sizeof(float), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += hy[i] != a * i + 1.0f;
    CK(cudaFree(x));
    CK(cudaFree(y));
    printf("axpy n=%d bad=%d y[%d]=%g\n", n, bad, n - 1, hy[n - 1]);
    return 0;
}

static int streams_events_symbols()
{
    cudaStream_t s;
    cudaEvent_t a, b;
    int *d, h[64], hs[4] = {1, 2, 3, 4};
    float ms = -1;
    CK(cudaStreamCreate(&s));
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    CK(cudaMalloc(&d, sizeof h));
    CK(cudaMemcpyToSymbol(scale, hs, sizeof hs));
    CK(cudaEventRecord(a, s));
    scaled<<<1, 4, 0, s>>>(d);
    CK(cudaEventRecord(b, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaEventElapsedTime(&ms, a, b));
    CK(cudaMemcpyAsync(h, d, 4 * sizeof(int), cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    printf("stream scaled=%d,%d,%d,%d elapsed_ok=%d\n", h[0], h[1], h[2], h[3], ms >= 0);
    // more dynamic shared memory than the default 48 KiB, once the function allows it
    CK(cudaFuncSetAttribute(big_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, 60000));
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, big_shared));
    big_shared<<<1, 64, 60000>>>(d);
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    printf("shared max_dyn=%d out=%d,%d\n", fa.maxDynamicSharedSizeBytes, h[0], h[63]);
    CK(cudaFree(d));
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    CK(cudaStreamDestroy(s));
    return 0;
}

int main()
{
    int count = 0, dev = -1, rt = 0, drv = 0;
    cudaDeviceProp p;
    CK(cudaGetDeviceCount(&count));
    CK(cudaGetDeviceProperties(&p, 0));
    CK(cudaRuntimeGetVersion(&rt));
    CK(cudaDriverGetVersion(&drv));
    printf("devices=%d name=%s cc=%d.%d driver=%d runtime_ok=%d\n", count, p.name, p.major,
           p.minor, drv, rt >= 13000);
    if (axpy_round(1000, 2.0f) || streams_events_symbols())
        return 1;
    say<<<1, 2>>>(40);
    CK(cudaDeviceSynchronize());
    int *bogus = (int *)0x1234;
    cudaError_t e = cudaFree(bogus);
    cudaError_t then = cudaGetLastError();
    printf("bad_free=%s then=%s\n", cudaGetErrorName(e), cudaGetErrorName(then));
    // a reset ends the primary context; the next call makes it anew, on the same handle
    CK(cudaDeviceReset());
    if (axpy_round(300, -1.0f))
        return 1;
    CK(cudaSetDevice(count - 1));
    CK(cudaGetDevice(&dev));
    if (axpy_round(10, 3.0f))
        return 1;
    say<<<1, 1>>>(7);
    CK(cudaStreamSynchronize(0));
    printf("last device=%d\n", dev);
    return 0;
}
