/* Threads sharing one context (CUDA allows a context current in several threads): each
 * thread allocates, copies, launches `add` and checks its own result, several times.
 * Usage: drv_threads PTX THREADS ROUNDS.  Prints "threads ok" on success. */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define N 48

static CUcontext ctx;
static CUfunction add;
static int rounds;

static void *work(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg, n = N, bytes = N * N * 4;
    unsigned *a = malloc(bytes), *c = malloc(bytes);
    CUdeviceptr da, dc;
    intptr_t bad = 0;
    if (cuCtxSetCurrent(ctx) || cuMemAlloc(&da, bytes) || cuMemAlloc(&dc, bytes))
        return (void *)1;
    for (int r = 0; r < rounds && !bad; r++) {
        for (unsigned i = 0; i < N * N; i++)
            a[i] = seed * 1000003u + i + (unsigned)r;
        void *params[] = {&da, &da, &dc, &n};
        bad = cuMemcpyHtoD(da, a, bytes)
              || cuLaunchKernel(add, 3, 3, 1, 16, 16, 1, 0, NULL, params, NULL)
              || cuMemcpyDtoH(c, dc, bytes);
        for (unsigned i = 0; i < N * N && !bad; i++)
            bad = c[i] != 2 * a[i];
    }
    cuMemFree(da);
    cuMemFree(dc);
    free(a);
    free(c);
    return (void *)bad;
}

int main(int argc, char **argv)
{
    int threads = argc > 3 ? atoi(argv[2]) : 0;
    CUdevice dev;
    CUmodule mod;
    pthread_t t[16];
    rounds = argc > 3 ? atoi(argv[3]) : 0;
    if (threads <= 0 || threads > 16 || cuInit(0) || cuDeviceGet(&dev, 0)
        || cuCtxCreate(&ctx, NULL, 0, dev) || cuModuleLoad(&mod, argv[1])
        || cuModuleGetFunction(&add, mod, "add"))
        return 2;
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, work, (void *)(uintptr_t)(i + 1));
    int failed = 0;
    for (int i = 0; i < threads; i++) {
        void *ret;
        pthread_join(t[i], &ret);
        failed += ret != NULL;
    }
    cuCtxDestroy(ctx);
    printf(failed ? "threads failed %d\n" : "threads ok\n", failed);
    return failed != 0;
}
