/* Driver-API measurements for scripts/bench/clib.py, through gdev-py's libcuda.so.1:
 *   drv_bench small N       N cuMemcpyHtoD of 4 bytes: "median_us p99_us"
 *   drv_bench htod MIB REPS pageable cuMemcpyHtoD of MIB MiB: "median_gbps best_gbps" */
#define _POSIX_C_SOURCE 200809L
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr d;
    int n = argc > 2 ? atoi(argv[2]) : 0;
    if (argc < 3 || n <= 0 || cuInit(0) || cuDeviceGet(&dev, 0) || cuCtxCreate(&ctx, NULL, 0, dev))
        return 1;
    if (!strcmp(argv[1], "small")) {
        double *t = malloc(sizeof *t * (size_t)n);
        unsigned word = 1;
        if (!t || cuMemAlloc(&d, 4096) || cuMemcpyHtoD(d, &word, 4))
            return 1;
        for (int i = 0; i < n; i++) {
            double t0 = now();
            if (cuMemcpyHtoD(d, &word, 4))
                return 1;
            t[i] = (now() - t0) * 1e6;
        }
        qsort(t, (size_t)n, sizeof *t, cmp);
        printf("%.1f %.1f\n", t[n / 2], t[(int)(n * 0.99)]);
        free(t);
    } else if (!strcmp(argv[1], "htod") && argc > 3) {
        int reps = atoi(argv[3]);
        size_t bytes = (size_t)n << 20;
        double *g = malloc(sizeof *g * (size_t)reps);
        char *host = malloc(bytes);
        if (!g || !host || reps <= 0 || cuMemAlloc(&d, bytes))
            return 1;
        memset(host, 7, bytes);
        for (int i = 0; i < reps; i++) {
            double t0 = now();
            if (cuMemcpyHtoD(d, host, bytes))
                return 1;
            g[i] = (double)bytes / (now() - t0) / 1e9;
        }
        qsort(g, (size_t)reps, sizeof *g, cmp);
        printf("%.2f %.2f\n", g[reps / 2], g[reps - 1]);
        free(host);
        free(g);
    } else {
        return 2;
    }
    cuCtxDestroy(ctx);
    return 0;
}
