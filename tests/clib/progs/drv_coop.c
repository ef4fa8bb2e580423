/* Cooperative launches through the CUDA driver API (libcuda.so.1): the COOPERATIVE_LAUNCH
 * attribute, cuOccupancyMaxActiveBlocksPerMultiprocessor, the largest grid by
 * cuLaunchCooperativeKernel and by cuLaunchKernelEx's cooperative attribute running grid
 * barriers (tests/ptx/data/coop_sync.ptx's census: every thread sees the whole grid
 * counted), one block more refused with CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, and a
 * plain launch of the kernel trapping at its barrier.  Usage: drv_coop MODULE. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#include "drv_check.h"

static int census(CUfunction f, CUdeviceptr count, CUdeviceptr seen, unsigned grid, int ex,
                  unsigned *want)
{
    int quit = -1;
    void *args[] = {&count, &seen, &quit};
    unsigned zero = 0, *h = malloc(sizeof *h * 32 * grid);
    CK(cuMemcpyHtoD(count, &zero, sizeof zero));
    if (ex) {
        CUlaunchAttribute attr = {.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE};
        attr.value.cooperative = 1;
        CUlaunchConfig cfg = {.gridDimX = grid, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 32,
                              .blockDimY = 1, .blockDimZ = 1, .attrs = &attr, .numAttrs = 1};
        CK(cuLaunchKernelEx(&cfg, f, args, NULL));
    } else {
        CK(cuLaunchCooperativeKernel(f, grid, 1, 1, 32, 1, 1, 0, NULL, args));
    }
    CK(cuMemcpyDtoH(h, seen, sizeof *h * 32 * grid));
    *want = grid;
    for (unsigned i = 0; i < 32 * grid; i++)
        if (h[i] != grid)
            *want = h[i];
    free(h);
    return 0;
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction f;
    CUdeviceptr count, seen;
    int coop = 0, mps = 0, per_mp = 0, quit = -1;
    unsigned by_call = 0, by_ex = 0;
    const char *name = "?";

    if (argc < 2)
        return 2;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuCtxCreate(&ctx, NULL, 0, dev));
    CK(cuDeviceGetAttribute(&coop, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, dev));
    CK(cuDeviceGetAttribute(&mps, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
    CK(cuModuleLoad(&mod, argv[1]));
    CK(cuModuleGetFunction(&f, mod, "census"));
    CK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_mp, f, 32, 0));
    unsigned grid = (unsigned)(per_mp * mps);
    CK(cuMemAlloc(&count, 4));
    CK(cuMemAlloc(&seen, 4 * 32 * (grid + 1)));
    if (census(f, count, seen, grid, 0, &by_call) || census(f, count, seen, grid, 1, &by_ex))
        return 1;
    void *args[] = {&count, &seen, &quit};
    CUresult big = cuLaunchCooperativeKernel(f, grid + 1, 1, 1, 32, 1, 1, 0, NULL, args);
    cuGetErrorName(big, &name);
    printf("drv_coop attribute=%d per_mp=%d grid=%u seen=%u,%u oversized=%s\n", coop, per_mp,
           grid, by_call, by_ex, name);
    CK(cuCtxSynchronize());             /* the refusal left the context usable */
    CK(cuLaunchKernel(f, 2, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    cuGetErrorName(cuCtxSynchronize(), &name);
    printf("drv_coop plain=%s\n", name);
    return 0;
}
