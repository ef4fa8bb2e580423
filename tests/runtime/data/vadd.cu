// Kernels for the runtime's launch tests (tests/runtime/test_launch_ptx.py).
// Regenerate: nvcc -ptx -arch=compute_75 -O3 -o vadd.ptx vadd.cu

__device__ unsigned int launched;          // a module global: lives in the data segment

extern "C" __global__ void vadd(const int *a, const int *b, int *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
    if (i == 0)
        atomicAdd(&launched, 1u);
}

extern "C" __global__ void poke(int *p)    // writes wherever it is told: a fault on demand
{
    p[threadIdx.x] = 42;
}

extern "C" __global__ void spin(volatile int *flag)   // runs until *flag != 0: forever here
{
    while (*flag == 0)
        ;
}
