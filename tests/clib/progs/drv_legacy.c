/* madd the way Gdev's own CUDA tests launch: the legacy driver API (cuParamSetv/i,
 * cuParamSetSize, cuFuncSetBlockShape, cuLaunchGrid), plus a primary context (cuDevicePrimary
 * CtxRetain) and cuModuleLoadData of the PTX text.  Usage: drv_legacy PTX N. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#include "drv_check.h"

#define ALIGN_UP(off, a) (((off) + (a) - 1) & ~((a) - 1))
int main(int argc, char **argv)
{
    unsigned n = argc > 2 ? (unsigned)atoi(argv[2]) : 0, bytes = n * n * 4;
    char *ptx = argc > 2 ? slurp(argv[1], NULL) : NULL;
    CUdevice dev;
    CUcontext ctx, cur;
    CUmodule mod;
    CUfunction f;
    CUdeviceptr a, b, c;
    unsigned flags;
    int active, off = 0;
    if (!ptx || !n)
        return 2;
    unsigned *h = malloc(bytes), *out = malloc(bytes);
    for (unsigned i = 0; i < n * n; i++)
        h[i] = i;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 1));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuDevicePrimaryCtxGetState(dev, &flags, &active));
    if (!active)
        return 1;
    CK(cuCtxSetCurrent(ctx));
    CK(cuCtxGetCurrent(&cur));
    CK(cuModuleLoadData(&mod, ptx));
    CK(cuModuleGetFunction(&f, mod, "add"));
    CK(cuMemAlloc(&a, bytes));
    CK(cuMemAlloc(&b, bytes));
    CK(cuMemAlloc(&c, bytes));
    CK(cuMemcpyHtoD(a, h, bytes));
    CK(cuMemcpyHtoD(b, h, bytes));
    off = ALIGN_UP(off, __alignof(a));
    CK(cuParamSetv(f, off, &a, sizeof a));
    off += sizeof a;
    CK(cuParamSetv(f, off, &b, sizeof b));
    off += sizeof b;
    CK(cuParamSetv(f, off, &c, sizeof c));
    off += sizeof c;
    CK(cuParamSeti(f, off, n));
    off += sizeof n;
    CK(cuParamSetSize(f, off));
    CK(cuFuncSetBlockShape(f, 16, 16, 1));
    CK(cuLaunchGrid(f, (n + 15) / 16, (n + 15) / 16));
    CK(cuMemcpyDtoH(out, c, bytes));
    for (unsigned i = 0; i < n * n; i++)
        if (out[i] != 2 * i) {
            fprintf(stderr, "c[%u] = %u\n", i, out[i]);
            return 1;
        }
    CK(cuModuleUnload(mod));
    CK(cuDevicePrimaryCtxRelease(dev));
    CK(cuDevicePrimaryCtxGetState(dev, &flags, &active));
    /* retained again: the same handle (as CUDA keeps it), a new context behind it */
    CUcontext again;
    CUdeviceptr x, base;
    size_t size;
    int reset_active;
    CK(cuDevicePrimaryCtxRetain(&again, dev));
    CK(cuCtxSetCurrent(again));
    CK(cuMemAlloc(&x, 64));
    int old_gone = cuMemGetAddressRange(&base, &size, a) != CUDA_SUCCESS;
    CK(cuDevicePrimaryCtxReset(dev));
    CK(cuDevicePrimaryCtxGetState(dev, &flags, &reset_active));
    printf("legacy ok same=%d active_after=%d again=%d old_gone=%d after_reset=%d\n",
           cur == ctx, active, again == ctx, old_gone, reset_active);
    free(h);
    free(out);
    free(ptx);
    return 0;
}
