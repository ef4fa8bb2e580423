// The runtime inside a context the program made current through the driver (CUDA's
// simpleDrvRuntime): allocations, copies and <<<>>> launches of the runtime go to that
// context; once it is popped the runtime's primary context serves again, and cudaSetDevice
// makes a device's primary context current.
#include <cstdio>
#include <cuda.h>

#include "rt_check.h"

__global__ void inc(int *p) { p[threadIdx.x] += threadIdx.x; }

#define DK(call) do { CUresult r_ = (call); if (r_) { printf("%s: %d\n", #call, r_); return 1; } } while (0)

int main(void)
{
    CUdevice dev;
    CUcontext ctx, cur = NULL;
    CUdeviceptr base;
    size_t size = 0;
    int *d, *e, h[64], rt_dev = -1, ok = 1;
    DK(cuInit(0));
    DK(cuDeviceGet(&dev, 1));
    DK(cuCtxCreate(&ctx, NULL, 0, dev));
    CK(cudaMalloc(&d, sizeof h));                       // in ctx: the driver finds it there
    DK(cuMemGetAddressRange(&base, &size, (CUdeviceptr)d));
    CK(cudaGetDevice(&rt_dev));
    CK(cudaMemset(d, 0, sizeof h));
    inc<<<1, 64>>>(d);
    CK(cudaGetLastError());
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 64; i++)
        ok &= h[i] == i;
    DK(cuCtxGetCurrent(&cur));
    int same = cur == ctx;
    DK(cuCtxPopCurrent(&cur));
    CK(cudaMalloc(&e, 4));                              // the primary context of device 1
    DK(cuCtxGetCurrent(&cur));
    int primary = cur && cur != ctx;
    CK(cudaSetDevice(0));
    CUcontext zero = NULL;
    DK(cuCtxGetCurrent(&zero));
    printf("driver_ctx size=%zu dev=%d values=%d same=%d primary=%d set=%d\n", size, rt_dev, ok,
           same, primary, zero && zero != cur && zero != ctx);
    CK(cudaSetDevice(1));
    CK(cudaFree(e));
    DK(cuCtxDestroy(ctx));
    return 0;
}
