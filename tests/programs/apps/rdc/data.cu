// The extern __device__ variable of main.cu, read by this unit's kernel, and a static
// __device__ function named as main.cu's.
#include "rdc.h"

__device__ int tally;

static __device__ __noinline__ int tag(int x) { return x + 2000; }

__global__ void read_tally(int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = tally + tag(i) + twice_of(i) - 2 * i;
}
