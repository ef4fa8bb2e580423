// Pinned host memory under unified addressing, as CUDA's samples use it: a cudaMallocHost
// pointer passed straight to kernels (no cudaHostGetDevicePointer), cudaHostGetDevicePointer
// and cudaPointerGetAttributes giving back that same pointer, and a kernel spinning on a pinned
// flag that the host sets only after queueing more work behind it (UnifiedMemoryPerf's
// latch).  Built by nvcc -cudart shared, run through scripts/gdev-run; prints "rt_uva ok".
#include <cstdio>
#include <unistd.h>

#include "rt_check.h"

__global__ void fill(int *p, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = 3 * i + 1;
}

__global__ void spin(volatile unsigned *latch)
{
    while (latch[0] < 1)
        ;
}

__global__ void bump(int *p)
{
    p[0] += 1;
}

int main()
{
    alarm(120);                               // a kernel that never sees the flag: fail, not hang
    const int n = 10000;
    int *h, *m, wrong = 0;
    CK(cudaMallocHost(&h, n * sizeof(int)));
    fill<<<(n + 255) / 256, 256>>>(h, n);     // the host pointer itself, in a kernel
    CK(cudaDeviceSynchronize());
    for (int i = 0; i < n; i++)
        wrong += h[i] != 3 * i + 1;

    void *d = nullptr;
    CK(cudaHostGetDevicePointer(&d, h, 0));
    cudaPointerAttributes a;
    CK(cudaPointerGetAttributes(&a, h + 5));
    int attrs = a.type == cudaMemoryTypeHost && a.devicePointer == h + 5 && a.hostPointer == h + 5;

    CK(cudaHostAlloc(&m, 4096, cudaHostAllocMapped | cudaHostAllocPortable));
    m[0] = 0;
    unsigned *latch;
    CK(cudaMallocHost(&latch, sizeof *latch));
    *latch = 0;
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    spin<<<1, 1, 0, s>>>(latch);              // holds the stream until the host says go
    bump<<<1, 1, 0, s>>>(m);
    usleep(300000);
    cudaError_t held = cudaStreamQuery(s);
    int before = m[0];
    *latch = 1;
    CK(cudaStreamSynchronize(s));
    printf("rt_uva ok wrong=%d same=%d attrs=%d held=%s before=%d after=%d\n", wrong, d == h,
           attrs, cudaGetErrorName(held), before, m[0]);
    CK(cudaStreamDestroy(s));
    CK(cudaFreeHost(latch));
    CK(cudaFreeHost(m));
    CK(cudaFreeHost(h));
    return 0;
}
