/* madd through the CUDA driver API (cuda.h, linked with -lcuda = gdev-py's libcuda.so.1):
 * module from a file, cuLaunchKernel with kernelParams, events, a stream, memset, pinned
 * memory, checked on the CPU.  Usage: drv_madd MODULE N.  "drv_madd ok" on success. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#include "drv_check.h"

int main(int argc, char **argv)
{
    unsigned n = argc > 2 ? (unsigned)atoi(argv[2]) : 0;
    size_t bytes = (size_t)n * n * sizeof(unsigned);
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction add;
    CUdeviceptr a, b, c;
    CUstream s;
    CUevent e0, e1;
    unsigned *ha, *hb, *hc;
    float ms;
    char name[64];
    int count, major, minor;

    if (!n)
        return 2;
    CK(cuInit(0));
    CK(cuDeviceGetCount(&count));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDeviceGetName(name, sizeof name, dev));
    CK(cuDeviceComputeCapability(&major, &minor, dev));
    CK(cuCtxCreate(&ctx, NULL, 0, dev));
    CK(cuModuleLoad(&mod, argv[1]));
    CK(cuModuleGetFunction(&add, mod, "add"));
    CK(cuMemAlloc(&a, bytes));
    CK(cuMemAlloc(&b, bytes));
    CK(cuMemAlloc(&c, bytes));
    CK(cuMemAllocHost((void **)&hc, bytes));
    ha = malloc(bytes);
    hb = malloc(bytes);
    for (unsigned i = 0; i < n * n; i++) {
        ha[i] = i * 3u + 1u;
        hb[i] = i ^ 0xa5a5u;
    }
    CK(cuMemcpyHtoD(a, ha, bytes));
    CK(cuMemcpyHtoD(b, hb, bytes));
    CK(cuMemsetD32(c, 0xdeadbeefu, n * n));
    CK(cuStreamCreate(&s, 0));
    CK(cuEventCreate(&e0, 0));
    CK(cuEventCreate(&e1, 0));
    void *params[] = {&a, &b, &c, &n};
    CK(cuEventRecord(e0, s));
    CK(cuLaunchKernel(add, (n + 15) / 16, (n + 15) / 16, 1, 16, 16, 1, 0, s, params, NULL));
    CK(cuEventRecord(e1, s));
    CK(cuMemcpyDtoHAsync(hc, c, bytes, s));
    CK(cuStreamSynchronize(s));
    CK(cuEventElapsedTime(&ms, e0, e1));
    for (unsigned i = 0; i < n * n; i++)
        if (hc[i] != ha[i] + hb[i]) {
            fprintf(stderr, "drv_madd: c[%u] = %u, want %u\n", i, hc[i], ha[i] + hb[i]);
            return 1;
        }
    CK(cuEventDestroy(e0));
    CK(cuEventDestroy(e1));
    CK(cuStreamDestroy(s));
    CK(cuMemFreeHost(hc));
    CK(cuMemFree(a));
    CK(cuMemFree(b));
    CK(cuMemFree(c));
    CK(cuModuleUnload(mod));
    CK(cuCtxDestroy(ctx));
    free(ha);
    free(hb);
    printf("drv_madd ok n=%u devices=%d name=%s cc=%d.%d kernel_ms=%.3f\n", n, count, name,
           major, minor, ms);
    return 0;
}
