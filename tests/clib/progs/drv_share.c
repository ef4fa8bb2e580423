/* Holds MIB MiB on vGPU DEV (driver API) until stdin closes, after printing "ready": the
 * test reads /proc/gdev meanwhile.  Usage: drv_share DEV MIB */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int ordinal = argc > 2 ? atoi(argv[1]) : -1;
    size_t bytes = argc > 2 ? (size_t)atoi(argv[2]) << 20 : 0;
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr d;
    size_t free_b, total;
    char line[16];

    if (cuInit(0) || cuDeviceGet(&dev, ordinal) || cuCtxCreate(&ctx, NULL, 0, dev)
        || cuMemAlloc(&d, bytes) || cuMemsetD8(d, 1, bytes) || cuMemGetInfo(&free_b, &total))
        return 1;
    printf("ready total=%zu free=%zu\n", total, free_b);
    fflush(stdout);
    while (fgets(line, sizeof line, stdin))
        ;
    cuMemFree(d);
    return cuCtxDestroy(ctx) != CUDA_SUCCESS;
}
