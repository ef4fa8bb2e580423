/* Concurrent streams through the CUDA driver API (linked with gdev-py's libcuda.so.1):
 * two `handshake` kernels (kernels/streams.ptx) in two streams, which can only end side by
 * side, and a third stream that reads their flags with the copy engine while they spin and
 * then writes the flag they wait for.  Event timestamps must show the overlap; a
 * non-blocking stream waits for an event of another (cuStreamWaitEvent).
 * Usage: drv_streams STREAMS_PTX.  "drv_streams ok" on success. */
#include <cuda.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "drv_check.h"

#define FLAGS (64u << 10) /* above the direct limit: the copies take the copy engines */

static unsigned host[FLAGS / 4];

static float between(CUevent a, CUevent b)
{
    float ms = 0;
    return cuEventElapsedTime(&ms, a, b) == CUDA_SUCCESS ? ms : -1e9f;
}

/* Read the flags in stream s until flags 0 and 1 are up (at most a minute). */
static int both_up(CUdeviceptr flags, CUstream s)
{
    struct timespec pause = {0, 5000000};
    for (int i = 0; i < 12000; i++) {
        if (cuMemcpyDtoHAsync(host, flags, FLAGS, s) != CUDA_SUCCESS)
            return 0;
        if (host[0] == 1 && host[1] == 1 && host[2] == 0)
            return 1;
        nanosleep(&pause, NULL);
    }
    return 0;
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction hs;
    CUdeviceptr flags;
    CUstream s[3], nb;
    CUevent ev[6], done;
    unsigned *one;
    unsigned me[2] = {0, 1}, other[2] = {1, 0}, two = 2;

    if (argc < 2)
        return 2;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuCtxCreate(&ctx, NULL, 0, dev));
    CK(cuModuleLoad(&mod, argv[1]));
    CK(cuModuleGetFunction(&hs, mod, "handshake"));
    CK(cuMemAlloc(&flags, FLAGS));
    CK(cuMemsetD32(flags, 0, FLAGS / 4));
    CK(cuMemAllocHost((void **)&one, 4));
    *one = 1;
    for (int i = 0; i < 3; i++)
        CK(cuStreamCreate(&s[i], 0));
    for (int i = 0; i < 6; i++)
        CK(cuEventCreate(&ev[i], 0));
    for (int k = 0; k < 2; k++) {
        void *params[] = {&flags, &me[k], &other[k], &two};
        CK(cuEventRecord(ev[2 * k], s[k]));
        CK(cuLaunchKernel(hs, 1, 1, 1, 1, 1, 1, 0, s[k], params, NULL));
        CK(cuEventRecord(ev[2 * k + 1], s[k]));
    }
    if (!both_up(flags, s[2])) {
        fprintf(stderr, "drv_streams: flags %u %u %u: the streams never overlapped\n",
                host[0], host[1], host[2]);
        return 1;
    }
    if (cuStreamQuery(s[0]) != CUDA_ERROR_NOT_READY) {
        fprintf(stderr, "drv_streams: a spinning stream is not NOT_READY\n");
        return 1;
    }
    CK(cuEventRecord(ev[4], s[2]));
    CK(cuMemcpyHtoDAsync(flags + 8, one, 4, s[2]));
    CK(cuEventRecord(ev[5], s[2]));
    CK(cuCtxSynchronize());
    /* a0 < b1 and b0 < a1: the kernels overlap; c0 < a1 and a0 < c1: the copy ran inside a */
    if (!(between(ev[0], ev[3]) > 0 && between(ev[2], ev[1]) > 0 &&
          between(ev[4], ev[1]) > 0 && between(ev[0], ev[5]) > 0)) {
        fprintf(stderr, "drv_streams: event times do not overlap\n");
        return 1;
    }
    /* cuStreamWaitEvent: a non-blocking stream reads flag 3 only after s[0] wrote it */
    CK(cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING));
    CK(cuEventCreate(&done, CU_EVENT_DISABLE_TIMING));
    CK(cuMemcpyHtoDAsync(flags + 12, one, 4, s[0]));
    CK(cuEventRecord(done, s[0]));
    CK(cuStreamWaitEvent(nb, done, 0));
    CK(cuMemcpyDtoHAsync(host, flags, FLAGS, nb));
    CK(cuStreamSynchronize(nb));
    if (host[3] != 1) {
        fprintf(stderr, "drv_streams: the wait did not order the read\n");
        return 1;
    }
    for (int i = 0; i < 3; i++)
        CK(cuStreamDestroy(s[i]));
    CK(cuStreamDestroy(nb));
    CK(cuCtxDestroy(ctx));
    printf("drv_streams ok\n");
    return 0;
}
