// Device printf through the runtime: the kernels' lines come out at the synchronizations, in
// their place among the host's lines (one stdio stream), with C's formatting; what a kernel
// prints after the last synchronization comes out at cudaDeviceReset.  Built by nvcc
// -cudart shared, run through scripts/gdev-run (stdout a pipe: fully buffered).
#include <cstdio>

__global__ void hello(const char *who, double x)
{
    printf("hello %s from block %d thread %d: %.3f %5x|%-3lld|\n", who, blockIdx.x, threadIdx.x,
           x * threadIdx.x, 255u + blockIdx.x, -(long long)threadIdx.x);
}

__global__ void counted(int *n)
{
    n[threadIdx.x] = threadIdx.x == 1 ? printf("lane %d of %d\n", threadIdx.x, blockDim.x) : -1;
}

int main()
{
    static const char who[] = "gdev";
    char *dwho;
    int *n, hn[2];
    cudaMalloc(&dwho, sizeof who);
    cudaMalloc(&n, sizeof hn);
    cudaMemcpy(dwho, who, sizeof who, cudaMemcpyHostToDevice);
    printf("host: before\n");
    hello<<<2, 2>>>(dwho, 1.5);
    cudaDeviceSynchronize();
    printf("host: between\n");
    counted<<<1, 2>>>(n);
    cudaMemcpy(hn, n, sizeof hn, cudaMemcpyDeviceToHost);      // a blocking copy flushes too
    printf("host: returns %d %d\n", hn[0], hn[1]);
    hello<<<1, 1>>>(dwho, 2.0);
    cudaDeviceReset();                                           // and the context's end
    printf("host: done\n");
    return 0;
}
