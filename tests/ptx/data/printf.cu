// Device printf (vprintf) as programs use it: every conversion family, lengths, flags, width
// and precision, strings, pointers, and printing from some lanes only.
#include <cstdio>

extern "C" __global__ void formats(const char *name, long long big, double x)
{
    printf("t%d %u %ld %lld %f %e %g %s %c %p %x %5.2f|%-4d|%04d %% %hd %hhu %zu %#o %a %s\n",
           threadIdx.x, 3u, -4L, big, 1.5f, x, 0.1, "str", 'Z', (void *)0, 255, 3.14159, 7,
           42, (short)-3, (unsigned char)200, (size_t)99, 8u, 3.0, name);
}

extern "C" __global__ void odd_lanes(int *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i % 2)
        out[i] = printf("block %d lane %d: %d\n", blockIdx.x, threadIdx.x, i * i);
    else
        out[i] = -7;
}

// Two calls per thread on either side of a barrier, from every block: a launch's text comes
// block after block, each block's calls in the order they ran (printorder.py).
extern "C" __global__ void two_calls(int *out)
{
    __shared__ int sum;
    if (threadIdx.x == 0)
        sum = 0;
    __syncthreads();
    atomicAdd(&sum, threadIdx.x);
    printf("b%d t%d first\n", blockIdx.x, threadIdx.x);
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = printf("b%d t%d sum %d\n", blockIdx.x, threadIdx.x, sum);
}
